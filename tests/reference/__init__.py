"""Reference implementations: the product's operations written out plainly, for tests to compare the
product's fast paths against. Nothing in ``stream`` imports them."""

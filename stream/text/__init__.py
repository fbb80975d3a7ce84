"""Text layer: raw document text/HTML -> normalized text -> tokens -> weighted features."""

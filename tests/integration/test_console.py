"""``dedup console`` in a real headless Chromium (Debian's chromium and chromedriver, driven by
Selenium; nothing downloads a browser) against a real worker on the session's tansu broker; and
``dedup show`` / ``dedup diff`` on the same deployment."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.harness import Deployment, demo_docs, listen_port

pytestmark = pytest.mark.integration  # one process runs the whole module (ONE_PROCESS in tests/conftest.py)

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,1400")


@pytest.fixture(scope="module")
def deployment(broker: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    tmp = tmp_path_factory.mktemp("console")
    with Deployment.running(broker, tmp) as d:
        data = tmp / "worker"
        d.start_worker("worker", data=data)
        d.wait_ready(data)
        yield d


@pytest.fixture(scope="module")
def console_url(deployment: Deployment) -> Iterator[str]:

    port = listen_port()
    log = open(deployment.tmp / "console.log", "ab")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "stream", "console", "--port", str(port)],
                            env=deployment.env(), stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(url + "api/overview", timeout=2).read()
                break
            except OSError:
                assert proc.poll() is None, (deployment.tmp / "console.log").read_text()
                assert time.monotonic() < deadline, "the console did not answer within 30 s"
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        proc.wait(15)
        log.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip("needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="dedup-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    # the driver's path given: Selenium Manager (which would download a browser) never runs
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_for(what: Callable[[], Any], timeout: float = 90.0, message: str = "") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = what()
            if last:
                return last
        except Exception as exc:  # an element replaced by the next poll: try again
            last = exc
        time.sleep(0.3)
    raise AssertionError(f"{message or 'condition'} not met within {timeout:.0f} s (last: {last!r})")


@contextmanager
def explained(deployment: Deployment) -> Iterator[None]:
    """A failure carries the worker's and the console's logs (CI keeps the output, not the temp dir)."""
    try:
        yield
    except AssertionError as exc:
        console_log = (deployment.tmp / "console.log").read_text(errors="replace").splitlines()[-20:]
        raise AssertionError("\n".join([str(exc), deployment.log_digest(), "--- console.log", *console_log])) from None


def text_of(browser: Any, element_id: str) -> str:
    return str(browser.find_element("id", element_id).text)


def pair_rows(browser: Any) -> list[tuple[str, str, str]]:
    # one script reads the whole table: it is drawn anew every 2 s, and a row read element by element
    # (three driver round trips each) goes stale before a loaded machine gets through them
    rows = browser.execute_script(
        "return Array.from(document.querySelectorAll('#pairs tbody tr'), r => [r.getAttribute('data-id'),"
        " r.getAttribute('data-canonical'), r.cells.length > 2 ? r.cells[2].innerText.trim() : ''])")
    return [(str(a), str(b), str(c)) for a, b, c in rows]


def current_kinds(browser: Any) -> dict[str, int]:
    # one script reads the four numbers: read one by one, a revision redrawn between two reads (an id moved
    # from unique to near) is counted twice
    kinds = browser.execute_script(
        "return ['unique', 'exact', 'near', 'contained'].map(k => document.getElementById('current-' + k).innerText)")
    return {k: int(n) for k, n in zip(("unique", "exact", "near", "contained"), kinds, strict=True)}


def test_the_console_follows_the_stream_in_a_browser(deployment: Deployment, console_url: str, browser: Any,
                                                     tmp_path: Path) -> None:
    with explained(deployment):
        docs = demo_docs()
        by_id = {d["id"]: d for d in docs}
        browser.get(console_url)
        wait_for(lambda: "live" in text_of(browser, "status"), 60, "the page says it is live")
        assert text_of(browser, "documents-total") == "0"
        assert browser.find_elements("css selector", "#rate-chart canvas"), "the throughput chart is drawn"

        # its numbers move as documents are published
        deployment.publish(docs[:200])
        wait_for(lambda: text_of(browser, "documents-total") == "200", message="200 documents on the page")
        deployment.publish(docs[200:])
        deployment.publish([(b"broken", b"{not json")])
        wait_for(lambda: text_of(browser, "documents-total") == "400", message="400 documents on the page")
        wait_for(lambda: "not_json" in text_of(browser, "dead"), message="the dead letter by its code")
        counts = current_kinds(browser)
        assert sum(counts.values()) == 400 and counts["exact"] > 0 and counts["near"] > 0
        assert len(browser.find_elements("css selector", "#lag tbody tr")) == 4  # one per documents partition

        # a pair's diff renders: the two texts, read from the documents topic, with the differences marked
        pairs = wait_for(lambda: [p for p in pair_rows(browser) if p[2] == "near"], message="a near pair listed")
        later, canonical, _ = pairs[0]
        # the table is drawn anew every 2 s: a row found may be replaced before the click lands
        wait_for(lambda: browser.find_element("css selector", f'#pairs tbody tr[data-id="{later}"]').click() or True,
                 message="a click on the pair")
        wait_for(lambda: browser.find_elements("css selector", "#diff-b mark.ins"), message="the diff marks")
        shown_a = browser.execute_script("return document.getElementById('diff-a').textContent")
        shown_b = browser.execute_script("return document.getElementById('diff-b').textContent")
        assert (shown_a, shown_b) == (by_id[canonical]["text"], by_id[later]["text"])
        assert browser.find_elements("css selector", "#diff-a mark.del")
        assert "similarity 0." in text_of(browser, "diff-summary")
        shot = Path(os.environ.get("DEDUP_CONSOLE_SCREENSHOT") or tmp_path / "console.png")
        height = browser.execute_script("return document.body.scrollHeight")
        browser.set_window_size(1400, min(2400, height + 140))  # the whole page, the diff included
        browser.execute_script("window.scrollTo(0, 0)")
        browser.save_screenshot(str(shot))

        # the search shows an id's verdicts and its cluster
        box = browser.find_element("id", "search-input")
        box.clear()
        box.send_keys(later + "\n")
        wait_for(lambda: canonical in text_of(browser, "search-result"), message="the search result")
        assert browser.find_elements("css selector", "#history tbody tr")

        # a deleted id disappears from the lists; a search says it was deleted
        def current() -> int:  # current verdicts of every kind: a late revision moves a kind, not the total
            return sum(current_kinds(browser).values())

        assert current() == 400
        deployment.publish([(later.encode(), None)])
        wait_for(lambda: later not in [p[0] for p in pair_rows(browser)], message="the deleted id gone from the pairs")
        wait_for(lambda: text_of(browser, "deleted-total") == "1", message="one deletion counted")
        assert current() == 399
        box = browser.find_element("id", "search-input")
        box.clear()
        box.send_keys(later + "\n")
        wait_for(lambda: "deleted" in text_of(browser, "search-result"), message="the search says deleted")


def current_verdicts(deployment: Deployment) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """The latest verdict per id, and the deleted ids (their latest record is a tombstone)."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(deployment.verdicts, bootstrap_servers=deployment.broker.bootstrap,
                             auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=2000)
    table: dict[str, dict[str, Any]] = {}
    deleted: set[str] = set()
    for msg in consumer:
        if msg.value is None:
            table.pop(msg.key.decode(), None)
            deleted.add(msg.key.decode())
        else:
            table[msg.key.decode()] = json.loads(msg.value)
            deleted.discard(msg.key.decode())
    consumer.close()
    return table, deleted


def test_show_and_diff_read_the_texts_where_the_verdicts_say(deployment: Deployment, console_url: str) -> None:
    """After the browser test (module order): a near pair's texts by ``dedup diff``, a document by ``show``."""
    with explained(deployment):
        table, deleted = current_verdicts(deployment)
        near = next(v for v in table.values() if v["verdict"] == "near_duplicate" and v["canonical"] in table)
        by_id = {d["id"]: d for d in demo_docs()}
        assert near["canonical_source"]["topic"] == deployment.documents

        def dedup(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-m", "stream", *args], env=deployment.env(), capture_output=True,
                                  text=True, timeout=120)

        done = dedup("diff", near["canonical"], near["id"], "--json")
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["a"]["text"] == by_id[near["canonical"]]["text"]
        assert result["b"]["text"] == by_id[near["id"]]["text"]
        assert result["a"]["position"] == near["canonical_source"]
        assert "".join(s[1] for s in result["segments"]) == result["a"]["text"]
        assert 0 < result["shared"] < 1
        done = dedup("diff", near["canonical"], near["id"])
        assert done.returncode == 0 and "[-" in done.stdout and "{+" in done.stdout, done.stdout + done.stderr

        done = dedup("show", near["id"])
        assert done.returncode == 0, done.stderr
        assert by_id[near["id"]]["text"].splitlines()[0] in done.stdout
        assert f"of {near['canonical']}" in done.stdout and f"cluster of {near['canonical']}" in done.stdout
        for gone in deleted:  # the browser test deleted one: its verdicts are shown, and that it was deleted
            done = dedup("show", gone)
            assert done.returncode == 0 and "(deleted)" in done.stdout and "deleted" in done.stdout.splitlines()[-1], \
                done.stdout + done.stderr
        assert deleted
        done = dedup("show", "no-such-id")
        assert done.returncode == 2 and done.stderr.startswith("dedup: error: no verdict for 'no-such-id'"), done.stderr


def test_a_port_in_use_is_one_line_and_exit_2(deployment: Deployment, console_url: str) -> None:
    port = console_url.rstrip("/").rsplit(":", 1)[1]
    done = subprocess.run([sys.executable, "-m", "stream", "console", "--port", port], env=deployment.env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (f"dedup: error: cannot serve the console on 127.0.0.1:{port}: "
                                                    "address already in use (choose another --port)")
    assert "Traceback" not in done.stderr

"""The report page in a real browser: headless Chromium from Debian's
packages (``chromium``, ``chromium-driver``; ``scripts/test.sh`` installs
them when missing), driven through selenium with the system's chromedriver
(nothing is downloaded). One browser session for the whole module.

It checks what only a browser can: the charts are drawn with their bars,
the filter hides the pairs above a chosen distance, the keyboard moves
between pairs, a record holding a script runs nothing, right-to-left text
runs right to left, the page loads nothing from anywhere and is readable
with scripts off. Screenshots go to a temporary directory whose path is
printed; they are never part of the repository.

Without Chromium the module is skipped, unless ``RSIMHASH_BROWSER_TESTS=1``
(set by ``scripts/test.sh``), where a missing browser is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import report_helpers as rh  # noqa: E402

rsimhash = pytest.importorskip("rsimhash")

REQUIRED = os.environ.get("RSIMHASH_BROWSER_TESTS") == "1"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
NEWS = os.path.join(HERE, "..", "examples", "news.jsonl")
EVIL = '<script>alert(1)</script> <img src=x onerror="window.pwned=1"> & more'
URL = "https://example.org/" + "/".join(f"section-{i}" for i in range(40)) + "?utm_source=newsletter&page="
WORLD = ["مرحبا بالعالم، هذا نص عربي قصير", "漢字かな交じり文の例です", "emoji 👨‍👩‍👧 🇫🇷 👍🏽 ok"]


def _missing(why: str) -> None:
    if REQUIRED:
        pytest.fail(f"{why} (RSIMHASH_BROWSER_TESTS=1: scripts/test.sh installs chromium and chromium-driver)")
    pytest.skip(why)


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM or not CHROMEDRIVER:
        _missing("no chromium and chromedriver on PATH (apt-get install chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing("selenium is not installed")
    os.environ.setdefault("SE_OFFLINE", "true")  # selenium never fetches a driver or browser
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1400",
        "--lang=en-US",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The news corpus's dedup page, a page of 2,000 records with distances
    0 to 3, and one of texts in several scripts with a script among them."""
    from rsimhash.cli import main

    tmp = tmp_path_factory.mktemp("browser")
    news = tmp / "news.html"
    assert main(["dedup", "--input", NEWS, "--output", str(tmp / "k.jsonl"), "--report", str(news), "-q"]) == 0
    corpus = tmp / "corpus.jsonl"
    corpus.write_bytes(rh.corpus_lines(2000, seed=11))
    many = tmp / "many.html"
    assert main(["dedup", "--input", str(corpus), "--output", str(tmp / "k2.jsonl"), "--report", str(many), "-q"]) == 0
    texts = [EVIL, EVIL + " again"] + [t for w in WORLD for t in (w, w + " !")]
    world = tmp / "world.html"
    rsimhash.report(texts, k=16).save(world)
    # ids as URLs, texts longer than the part shown that differ past it
    common = " ".join(f"word{i}" for i in range(600))
    long_texts = [common + " the end", common + " another end", common + " yet another end, longer"]
    urls = [URL + str(i) for i in range(3)]
    long = tmp / "long.html"
    rsimhash.report(long_texts, ids=urls, removed={"id": urls[1:], "duplicate_of": urls[:1] * 2, "distance": [2, 3]}).save(long)
    return {"news": news, "many": many, "world": world, "long": long}


def _open(driver, path):
    driver.get(path.as_uri())
    assert driver.execute_script("return document.readyState") == "complete"


def test_charts_have_their_bars(browser, pages):
    from selenium.webdriver.common.by import By

    _open(browser, pages["many"])
    bars = browser.find_elements(By.CSS_SELECTOR, "#chart-hamming rect.bar")
    assert [b.get_attribute("data-x") for b in bars] == ["0", "1", "2", "3"]
    for bar in bars:  # each distance has removed records here: each bar is drawn, taller for more
        assert int(bar.get_attribute("data-count")) > 0 and bar.size["height"] > 0 and bar.is_displayed()
    counts = [int(b.get_attribute("data-count")) for b in bars]
    heights = [b.size["height"] for b in bars]
    assert sorted(range(4), key=lambda i: counts[i]) == sorted(range(4), key=lambda i: heights[i])
    assert sum(counts) == int(browser.find_element(By.CSS_SELECTOR, 'td[data-key="removed"]').get_attribute("data-value"))
    dots = browser.find_elements(By.CSS_SELECTOR, "#chart-sizes circle.dot")
    assert dots and all(d.is_displayed() for d in dots)
    # nothing was loaded but the page itself
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0


def test_filter_hides_pairs_above_the_chosen_distance(browser, pages):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    _open(browser, pages["many"])
    state = (
        "return Array.from(document.querySelectorAll('article.pair'))"
        ".map(p => [p.id, +p.dataset.distance, p.getClientRects().length > 0])"
    )  # shown: has a box
    pairs = browser.execute_script(state)
    assert {d for _, d, _ in pairs} == {0, 1, 2, 3} and all(seen for _, _, seen in pairs)
    slider = browser.find_element(By.ID, "max-distance")
    assert slider.is_displayed()  # the script shows the form
    slider.send_keys(Keys.HOME, Keys.ARROW_RIGHT)  # distance at most 1
    assert slider.get_attribute("value") == "1"
    pairs = browser.execute_script(state)
    shown = [i for i, d, seen in pairs if seen]
    assert shown and all(seen == (d <= 1) for _, d, seen in pairs)
    assert browser.find_element(By.ID, "shown").text == f"{len(shown)} of {len(pairs)} pairs shown"
    # keyboard: j and k move between the pairs still shown
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("j")
    assert browser.switch_to.active_element.get_attribute("id") == shown[0]
    browser.switch_to.active_element.send_keys("j")
    assert browser.switch_to.active_element.get_attribute("id") == shown[1]
    browser.switch_to.active_element.send_keys("k")
    assert browser.switch_to.active_element.get_attribute("id") == shown[0]


def test_a_script_in_a_record_runs_nothing_and_any_script_shows(browser, pages, capsys, tmp_path):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    _open(browser, pages["world"])
    with pytest.raises(NoAlertPresentException):
        _ = browser.switch_to.alert.text
    assert browser.execute_script("return window.pwned === undefined && document.scripts.length === 1")
    assert browser.find_elements(By.TAG_NAME, "img") == []
    texts = [e.get_attribute("textContent") for e in browser.find_elements(By.CSS_SELECTOR, "article.pair div.text")]
    assert EVIL in texts and all(any(w == t for t in texts) for w in WORLD)
    arabic = next(
        e for e in browser.find_elements(By.CSS_SELECTOR, "article.pair div.text") if e.get_attribute("textContent") == WORLD[0]
    )
    assert browser.execute_script("return getComputedStyle(arguments[0]).direction", arabic) == "rtl"
    latin = next(
        e for e in browser.find_elements(By.CSS_SELECTOR, "article.pair div.text") if e.get_attribute("textContent") == EVIL
    )
    assert browser.execute_script("return getComputedStyle(arguments[0]).direction", latin) == "ltr"
    # screenshots, for people to look at: never committed, and kept with
    # pytest's temporary directories (its last few runs), not left in /tmp
    shots = str(tmp_path / "report-screenshots")
    os.mkdir(shots)
    for name in ("world", "news", "many", "long"):
        _open(browser, pages[name])
        height = browser.execute_script("return document.documentElement.scrollHeight")
        browser.set_window_size(1280, min(max(height, 800), 6000))
        path = os.path.join(shots, f"{name}.png")
        assert browser.save_screenshot(path)
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n" and os.path.getsize(path) > 20_000
    browser.set_window_size(1280, 1400)
    with capsys.disabled():
        print(f"\nreport screenshots: {shots}")


def test_readable_with_scripts_off(browser, pages):
    from selenium.webdriver.common.by import By

    browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    try:
        _open(browser, pages["news"])
        assert not browser.find_element(By.ID, "filter").is_displayed()  # useless without a script: hidden
        pairs = browser.find_elements(By.CSS_SELECTOR, "article.pair")
        assert len(pairs) == 2 and all(p.is_displayed() for p in pairs)
        fold = browser.find_element(By.CSS_SELECTOR, "details.fold > summary")
        fold.click()  # folds open without a script
        assert browser.find_element(By.CSS_SELECTOR, "details.fold").get_attribute("open") is not None
        assert browser.find_element(By.CSS_SELECTOR, "#chart-hamming rect.bar").size["height"] > 0
        nums = {e.get_attribute("data-key"): e.text for e in browser.find_elements(By.CSS_SELECTOR, "td[data-key]")}
        assert nums["records"] == "15" and json.dumps(nums)
    finally:
        browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})


def test_long_ids_wrap_and_the_cut_is_seen(browser, pages):
    from selenium.webdriver.common.by import By

    _open(browser, pages["long"])
    codes = browser.find_elements(By.CSS_SELECTOR, "td.id code, .who code")
    assert len(codes) == 3 + 2 * 2 and all(URL in c.text for c in codes)  # the whole id, as shown
    clipped = """
        const code = arguments[0], box = code.closest("td, .who");
        const r = code.getBoundingClientRect(), b = box.getBoundingClientRect();
        return [box.scrollWidth > box.clientWidth, r.right > b.right + 1, code.getClientRects().length];
    """
    for code in codes:
        overflows, beyond, lines = browser.execute_script(clipped, code)
        assert not overflows and not beyond and lines > 1  # wrapped onto several lines, nothing hidden
    cuts = browser.find_elements(By.CSS_SELECTOR, "article.pair p.cut")
    assert len(cuts) == 4 and all(c.is_displayed() and c.text.startswith("cut: the first 2,500 of") for c in cuts)
    changed = browser.find_elements(By.CSS_SELECTOR, "article.pair p.changed")
    assert all("in the whole texts" in c.text for c in changed) and changed[0].is_displayed()

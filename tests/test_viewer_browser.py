"""The HTML page in a real headless Chromium, driven through selenium and chromedriver.

Install what it needs with:
    apt-get install -y chromium chromium-driver && pip install selenium
Set BYTEGRAPH_VIEWER_SCREENSHOT=path.png to keep a screenshot of the page.
"""

import os
import shutil

import pytest

from test_viewer_model import build_sample_trace, requires_sample_bytecode
from test_viewer_render import NASTY, nasty_trace

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("no Chromium browser installed (apt-get install chromium)")
    if CHROMEDRIVER is None:
        pytest.skip("no chromedriver installed (apt-get install chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1440,900"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The browser never loads bytegraph: a sanitizer runtime preloaded for it (make asan) stays out.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    service = webdriver.ChromeService(executable_path=CHROMEDRIVER, env=env)
    driver = webdriver.Chrome(options=options, service=service)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def sample():
    return build_sample_trace()


@pytest.fixture(scope="module")
def page_url(tmp_path_factory, sample):
    path = tmp_path_factory.mktemp("viewer") / "trace.html"
    sample.to_html(path)
    return path.as_uri()


def open_page(driver, url):
    driver.get("about:blank")  # a fresh load, not a hash change on the open page
    driver.get(url)
    return driver


def console_errors(driver):
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def current_offset(driver):
    rows = driver.find_elements(By.CSS_SELECTOR, "#bytecode tr.current")
    assert len(rows) == 1, "exactly one bytecode row is highlighted"
    return int(rows[0].get_attribute("data-offset"))


def stack_values(driver):
    """The stack panel's values, bottom first like Step.stack (the panel shows the top first)."""
    cells = driver.find_elements(By.CSS_SELECTOR, "#stack td.value")
    return [cell.text for cell in reversed(cells)]


def location_hash(driver):
    return driver.execute_script("return location.hash")


@requires_sample_bytecode
def test_page_loads_without_console_errors_and_shows_the_first_step(browser, page_url, sample):
    open_page(browser, page_url)
    assert console_errors(browser) == []
    first = sample.frames[0].steps[0]
    assert current_offset(browser) == first.offset
    assert browser.find_element(By.ID, "note").text == first.note
    assert browser.find_element(By.ID, "title").text == "sample_fn"
    options = [option.text for option in browser.find_elements(By.CSS_SELECTOR, "#frame-select option")]
    assert [text.split(" \u2014 ")[1].split(" ")[0] for text in options] == ["original", "inlined", "resume"]


@requires_sample_bytecode
def test_next_button_and_arrow_key_move_the_highlight_and_the_stack(browser, page_url, sample):
    steps = sample.frames[0].steps
    open_page(browser, page_url)
    assert stack_values(browser) == steps[0].stack == []
    browser.find_element(By.ID, "next").click()
    assert current_offset(browser) == steps[1].offset != steps[0].offset
    assert stack_values(browser) == steps[1].stack == ["ConstantVariable(0)"]
    assert browser.find_elements(By.CSS_SELECTOR, "#stack tr.new td.value")[0].text == "ConstantVariable(0)"
    assert location_hash(browser) == "#frame=0&step=1"
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_RIGHT)
    assert current_offset(browser) == steps[2].offset
    assert stack_values(browser) == steps[2].stack == []
    assert "a0" in [cell.text for cell in browser.find_elements(By.CSS_SELECTOR, "#locals tr.changed td.name")]
    assert location_hash(browser) == "#frame=0&step=2"
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_LEFT)
    assert current_offset(browser) == steps[1].offset
    browser.find_element(By.ID, "last").click()
    assert current_offset(browser) == steps[-1].offset
    assert browser.find_element(By.ID, "next").get_attribute("disabled") is not None
    assert console_errors(browser) == []


@requires_sample_bytecode
def test_deep_link_opens_that_step(browser, page_url, sample):
    steps = sample.frames[0].steps
    open_page(browser, page_url + "#step=5")
    assert current_offset(browser) == steps[5].offset
    assert browser.find_element(By.ID, "note").text == steps[5].note
    assert browser.find_element(By.ID, "slider").get_attribute("value") == "5"

    open_page(browser, page_url + "#frame=2&step=4")
    resume = sample.frames[2]
    assert browser.find_element(By.ID, "frame-select").get_attribute("value") == "2"
    assert current_offset(browser) == resume.steps[4].offset
    assert stack_values(browser) == resume.steps[4].stack
    assert browser.find_element(By.CSS_SELECTOR, "#source .src-line.current").text.split(None, 1) == [
        str(resume.steps[4].line),
        resume.steps[4].source,
    ]
    assert console_errors(browser) == []


@requires_sample_bytecode
def test_call_step_links_into_the_inlined_frame_and_back(browser, page_url, sample):
    open_page(browser, page_url + "#frame=0&step=16")
    new_nodes = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "#graph tr.new")]
    assert len(new_nodes) == 1 and "mul" in new_nodes[0]
    browser.find_element(By.PARTIAL_LINK_TEXT, "step into helper").click()
    helper = sample.frames[1]
    assert location_hash(browser) == "#frame=1&step=0"
    assert current_offset(browser) == helper.steps[0].offset
    assert "def helper(x):" in browser.find_element(By.ID, "source").text
    browser.find_element(By.PARTIAL_LINK_TEXT, "back to the caller").click()
    assert location_hash(browser) == "#frame=0&step=16"
    assert console_errors(browser) == []


@requires_sample_bytecode
def test_only_new_stack_entries_and_graph_nodes_are_marked(browser, page_url, sample):
    steps = sample.frames[0].steps
    open_page(browser, page_url + "#step=8")  # LOAD_FAST a1 on top of a0's value
    assert stack_values(browser) == steps[8].stack == ["ConstantVariable(0)", "ConstantVariable(1)"]
    assert [cell.text for cell in browser.find_elements(By.CSS_SELECTOR, "#stack tr.new td.value")] == ["ConstantVariable(1)"]
    assert browser.find_elements(By.CSS_SELECTOR, "#graph tr.new") == []
    open_page(browser, page_url + "#step=21")  # CALL of c.sum(): one node more
    assert [row.text.split()[1:3] for row in browser.find_elements(By.CSS_SELECTOR, "#graph tr.new")] == [["call_method", "sum_1"]]
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph tr")) == len(steps[21].graph)


@requires_sample_bytecode
def test_bracket_keys_switch_frames(browser, page_url, sample):
    open_page(browser, page_url + "#frame=0&step=3")
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("]")
    assert location_hash(browser) == "#frame=1&step=0"
    assert current_offset(browser) == sample.frames[1].steps[0].offset
    body.send_keys("]")
    body.send_keys(Keys.END)
    assert location_hash(browser) == f"#frame=2&step={len(sample.frames[2].steps) - 1}"
    body.send_keys("[")
    assert location_hash(browser) == "#frame=1&step=0"


@requires_sample_bytecode
def test_clicking_a_bytecode_row_goes_to_its_step(browser, page_url, sample):
    steps = sample.frames[0].steps
    open_page(browser, page_url)
    target = next(index for index, step in enumerate(steps) if step.opname == "COMPARE_OP")
    browser.find_element(By.CSS_SELECTOR, f'#bytecode tr[data-offset="{steps[target].offset}"]').click()
    assert location_hash(browser) == f"#frame=0&step={target}"


@requires_sample_bytecode
def test_values_with_markup_are_shown_as_text(browser, tmp_path):
    path = tmp_path / "nasty.html"
    trace = nasty_trace()
    trace.to_html(path)
    open_page(browser, path.as_uri() + f"#frame={len(trace.frames) - 1}&step=0")
    assert console_errors(browser) == []
    assert browser.find_element(By.ID, "note").text == NASTY
    assert stack_values(browser) == [NASTY]
    assert browser.find_elements(By.CSS_SELECTOR, "#note b, #stack b, #locals b") == []
    assert "<lambda>" in browser.find_element(By.ID, "frame-select").text


@requires_sample_bytecode
def test_screenshot_of_a_step(browser, page_url, tmp_path):
    open_page(browser, page_url + "#frame=0&step=21")
    path = tmp_path / "viewer.png"
    assert browser.save_screenshot(str(path))
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 10_000
    keep = os.environ.get("BYTEGRAPH_VIEWER_SCREENSHOT")
    if keep:
        shutil.copyfile(path, keep)
    assert console_errors(browser) == []

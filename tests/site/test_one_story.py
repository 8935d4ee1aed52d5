"""One story: a labelled quantity has one value on every built page (issue 19, item 4).

The test reads every built page's article as text and finds labelled quantities: a
label and a number with its unit ("KV cache of the replica 399,169 tokens", "fp8
weights ... 18.2 GB per GPU", "Scale-up delay ... = 47.6 s", "Within 50 ms per token
... $1.85 per million"). A label seen with two different values on two pages fails,
naming both pages and both values. The running example's capacity has one value
(:data:`calc.lesson.KV_CAPACITY_TOKENS`); its alternative counts may appear on step 1
only, which explains where each comes from.

``test_a_contradiction_is_caught`` proves the test can fail: it copies one built page,
changes one quantity in the copy, and checks that the finder reports it.

Run after a build: ``.venv/bin/python -m pytest -q tests/site/test_one_story.py`` (``CALC_SITE_DIR`` names another built folder).
"""

from __future__ import annotations

import html
import os
import pathlib
import re
import shutil

import pytest

from calc import lesson

ROOT = pathlib.Path(__file__).resolve().parents[2]
SITE = pathlib.Path(os.environ.get("CALC_SITE_DIR", ROOT / "site"))  # the built site; another folder for a private build
STEP_1 = "lesson/01-a-70b-assistant/"
#: The step that owns a quantity's alternatives: each may be shown there, once, with where it comes from.
ALTERNATIVES_HOME = {"running example's KV capacity": STEP_1}

_N = r"\d[\d,]*(?:\.\d+)?"
#: Within one sentence: any character but a full stop, or a decimal point inside a number.
_S = r"(?:[^.]|(?<=\d)\.(?=\d))"
#: label -> patterns; group 1 is the value with its unit. Patterns are matched on the article's text
#: (tags stripped, entities decoded, whitespace collapsed), so a table row reads "label value".
LABELLED = {
    # Any count of tokens from 399,000 to 399,999 is the replica's capacity (or one of its alternatives,
    # which belong on step 1 only).
    "running example's KV capacity": [r"\b(399,\d{3}) tokens\b", rf"KV cache of the replica:? (?:is )?({_N})"],
    "requests of 1,280 tokens at once (bf16)": [r"(?<!→ )\b(\d{3}) (?:average )?(?:requests|conversations) of 1,280 tokens",
                                                r"Requests of 1,280 tokens at once (\d+)"],
    "fp8 weights per GPU": [rf"fp8 weights(?: \[\d+\])?:{_S}{{0,80}}?({_N} GB) per GPU", rf"Weights per GPU, fp8 ({_N} GB)",
                            rf"Weights per GPU, after ({_N} GB) \(fp8\)"],
    "KV tokens with fp8 weights": [rf"fp8 weights(?: \[\d+\])?:{_S}{{0,100}}?({_N}) tokens", rf"KV cache, fp8 weights ({_N})",
                                   rf"KV cache, fp8 ({_N}) tokens", rf"KV cache, after ({_N}) tokens \(fp8\)"],
    "scale-up delay of step 15": [rf"[Ss]cale-up delay\b{_S}*?= ({_N} s)\b(?!{_S}*?=)"],
    "FlashAttention score matrix per layer on each GPU": [rf"({_N} [GT]B) per layer on each GPU",
                                                          rf"one layer's scores for the \d+ heads on one GPU would take ({_N} [GT]B)",
                                                          rf"Scores of one layer, if materialised ({_N} [GT]B) per GPU"],
    "price of the replica within 50 ms per token": [rf"[Ww]ithin 50 ms per token{_S}*?(\$?{_N}) per million",
                                                    rf"With prefill: cost (\${_N}) per million",
                                                    rf"Per million output tokens: batch 1 / at the target \${_N} / (\${_N})"],
    "GPU-Util over the incident's run": [rf"GPU-Util \(reported(?:, run)?\) ({_N}%)", rf"GPU-Util ({_N}%) over the run"],
    "speculation example speed-up (a = 0.7, k = 4)": [rf"\ba\W{{0,4}}= 0\.7\W{{0,8}}k\W{{0,4}}= 4\W{_S}{{0,60}}?\b({_N})x\b"],
}
#: Pages the incident's GPU-Util label is read on (others quote GPU-Util of other runs under the same words).
SCOPE = {"GPU-Util over the incident's run": ("lesson/19-incident-p99-ttft/", "lesson/21-cheat-sheet/")}


def article_text(page_html: str) -> str:
    """The article of a built page as plain text (tags stripped, entities decoded, spaces collapsed).

    >>> article_text('<article><p>KV cache of the replica</p><td>399,169&nbsp;tokens</td></article>')
    'KV cache of the replica 399,169 tokens'
    """
    m = re.search(r"<article\b.*?</article>", page_html, re.S)
    text = re.sub(r"<[^>]+>", " ", m.group(0) if m else "")
    return re.sub(r"\s+", " ", html.unescape(text)).strip()


def labelled_quantities(pages: dict[str, str]) -> dict[str, dict[str, set[str]]]:
    """label -> value -> the pages that show it, from ``{page: article text}``.

    >>> found = labelled_quantities({"a/": "Scale-up delay: 30 s + 35.3 GB / 2 GB/s = 47.6 s.",
    ...                              "b/": "the scale-up delay = 60 s + 141 GB / 2 GB/s = 131 s."})
    >>> sorted(found["scale-up delay of step 15"].items())
    [('131 s', {'b/'}), ('47.6 s', {'a/'})]
    """
    found: dict[str, dict[str, set[str]]] = {}
    for label, patterns in LABELLED.items():
        for page, text in pages.items():
            if label in SCOPE and not page.startswith(SCOPE[label]):
                continue
            for pattern in patterns:
                for m in re.finditer(pattern, text):
                    value = m.group(1).lstrip("$")
                    found.setdefault(label, {}).setdefault(value, set()).add(page)
    return found


def contradictions(pages: dict[str, str]) -> list[str]:
    """Every labelled quantity given two values on two pages, or its alternatives outside their home.

    >>> contradictions({"x/": "fp8 weights: 17.6 GB per GPU", "y/": "Weights per GPU, fp8 18.2 GB"})
    ["fp8 weights per GPU: '17.6 GB' on x/; '18.2 GB' on y/"]
    """
    problems = []
    for label, values in sorted(labelled_quantities(pages).items()):
        home = ALTERNATIVES_HOME.get(label)
        if home:  # the one value everywhere; the alternatives only on their home page
            canonical = f"{lesson.KV_CAPACITY_TOKENS:,}"
            stray = {v: p - {home} for v, p in values.items() if v != canonical and p - {home}}
            if stray:
                problems.append(f"{label}: {canonical} is the one value; also "
                                + "; ".join(f"{v!r} on {', '.join(sorted(p))}" for v, p in sorted(stray.items())))
            continue
        if len(values) > 1:
            problems.append(f"{label}: " + "; ".join(f"{v!r} on {', '.join(sorted(p))}" for v, p in sorted(values.items())))
    return problems


def built_pages(site: pathlib.Path = SITE) -> dict[str, str]:
    pages = {}
    for path in sorted(site.rglob("index.html")):
        rel = path.parent.relative_to(site).as_posix()
        pages[(rel + "/") if rel != "." else ""] = article_text(path.read_text(encoding="utf-8"))
    return pages


@pytest.fixture(scope="module")
def pages():
    if not (SITE / "lesson" / "21-cheat-sheet" / "index.html").exists():
        pytest.skip("build the site first (mkdocs build --site-dir site)")
    return built_pages()


def test_every_labelled_quantity_has_one_value(pages):
    assert not contradictions(pages), "\n".join(contradictions(pages))


def test_the_finder_sees_the_quantities_on_the_summary_pages(pages):
    """The cheat sheet and the steps it summarises are read, not skipped: each label is found on two pages or more."""
    found = labelled_quantities(pages)
    for label in LABELLED:
        seen = set().union(*found.get(label, {}).values()) if found.get(label) else set()
        assert len(seen) >= 2, (label, seen)
    assert "lesson/21-cheat-sheet/" in set().union(*found["scale-up delay of step 15"].values())
    capacity = found["running example's KV capacity"]
    assert set(capacity) - {f"{lesson.KV_CAPACITY_TOKENS:,}"} <= {
        f"{n:,}" for n in (lesson.KV_CAPACITY_TOKENS_LESSON_GB_BLOCKS, lesson.KV_CAPACITY_TOKENS_EXACT_PARAMETERS,
                           lesson.KV_CAPACITY_TOKENS_EXACT_PARAMETERS_BLOCKS)}


PLAYGROUND = "lesson/22-playground/"


def test_the_playground_quotes_the_lessons_capacity(pages):
    """Step 22 (its memory view, its quiz, its simulation's prose) shows the one capacity and the requests it fits."""
    found = labelled_quantities({PLAYGROUND: pages[PLAYGROUND]})
    assert found["running example's KV capacity"] == {f"{lesson.KV_CAPACITY_TOKENS:,}": {PLAYGROUND}}
    assert found["requests of 1,280 tokens at once (bf16)"] == {f"{lesson.kv_batch_limit():,}": {PLAYGROUND}}


@pytest.mark.parametrize("page, old, new", [
    ("lesson/21-cheat-sheet/", "47.6 s", "131 s"),                # the scale-up delay the issue found
    ("lesson/13-long-context/", "399,169 tokens", "399,440 tokens"),  # an alternative capacity off step 1
    ("lesson/07-fp8-weights/", "18.2 GB", "17.6 GB"),              # fp8 weights counted another way
    (PLAYGROUND, "399,169 tokens", "399,440 tokens"),              # the simulator's exact count on step 22
])
def test_a_contradiction_is_caught(pages, tmp_path, page, old, new):
    """A deliberate break in a temporary copy of one built page makes the test fail."""
    source = SITE / page / "index.html"
    copy = tmp_path / "site"
    shutil.copytree(SITE / "lesson", copy / "lesson")
    broken = copy / page / "index.html"
    text = source.read_text(encoding="utf-8")
    assert old in text
    broken.write_text(text.replace(old, new, 1), encoding="utf-8")
    problems = contradictions(built_pages(copy))
    assert problems and any(new.split()[0] in p for p in problems), problems


# --- the story's claims, each read off the built page and checked against calc (issue 32) -------------------------

STEP = {n: f"lesson/{slug}/" for n, slug in {
    1: "01-a-70b-assistant", 3: "03-drill-kv-bytes", 5: "05-paged-attention", 6: "06-twice-the-traffic",
    7: "07-fp8-weights", 11: "11-system-prompt", 13: "13-long-context", 15: "15-scale-on-the-queue",
    16: "16-cost-per-million-tokens", 18: "18-disaggregation", 19: "19-incident-p99-ttft", 20: "20-the-fix"}.items()}


def _number(text: str) -> float:
    return float(text.replace(",", "").rstrip("%"))


def _seconds(value: float) -> str:
    from calc.units import format_number

    return f"{format_number(value)} s"


def test_step15_right_signal_with_right_sized_headroom_beats_gpu_util_on_both(pages):
    """The page's own sentence: the headroom it computes, and a p99 and a bill both below GPU-Util's."""
    from calc.autoscale import ramp_headroom, steepest_ramp
    from calc.gpu_util import replica_capacity_rps
    from calc.sim import presets
    from calc.sim_views import fleet_scale_up_delay_s, preset_summary

    text = pages[STEP[15]]
    m = re.search(rf"this ramp adds ({_N}) requests/s in that window, ({_N}) replicas' worth\. So keep (\d+) "
                  rf"replicas? of warm headroom above the (\d+) the quiet hours need, a floor of (\d+): TTFT p99 "
                  rf"({_N}) s, {_N} times lower than GPU-Util ?'s ({_N}) s, for ({_N}) replica-hours, {_N}% fewer than "
                  rf"GPU-Util ?'s", text)
    assert m, "step 15's headroom sentence"
    growth, growth_replicas, headroom, start, floor, warm_p99, gpu_p99, warm_hours = (
        _number(m.group(i)) for i in range(1, 9))
    # The headroom is computed from the ramp's growth over one window (interval + scale-up delay) ...
    queue = presets.load_data("step15-scale-on-queue")
    window = queue["fleet"]["autoscaler"]["interval_s"] + fleet_scale_up_delay_s()
    ramp = steepest_ramp(queue["fleet"]["traffic"])
    sizing = ramp_headroom(start_rps=ramp["start_rps"], slope_rps_per_s=ramp["slope_rps_per_s"], window_s=window,
                           replica_capacity_rps=replica_capacity_rps())
    assert growth == pytest.approx(sizing["growth_rps"], rel=0.01)
    assert growth_replicas == pytest.approx(sizing["growth_replicas"], rel=0.01)
    assert (headroom, start, floor) == (sizing["headroom_replicas"], sizing["replicas_at_start"], sizing["warm_floor"])
    assert headroom * replica_capacity_rps() >= sizing["growth_rps"] > (headroom - 1) * replica_capacity_rps()
    # ... the arm the page runs keeps that floor, and beats GPU-Util on both latency and cost.
    warm, gpu, alone = (preset_summary(n) for n in ("step15-warm-headroom", "step14-scale-on-gpu-util",
                                                    "step15-scale-on-queue"))
    assert warm["replicas_initial"] == floor
    assert warm_p99 < gpu_p99 and warm["ttft_p99_s"] < gpu["ttft_p99_s"]
    assert warm["replica_hours"] < gpu["replica_hours"]
    assert (_seconds(warm["ttft_p99_s"]), _seconds(gpu["ttft_p99_s"])) == (f"{m.group(6)} s", f"{m.group(7)} s")
    assert warm_hours == pytest.approx(warm["replica_hours"], rel=0.01)
    # Without the headroom the right signal alone is the cheapest and the slowest: the window costs latency.
    assert alone["ttft_p99_s"] > gpu["ttft_p99_s"] > warm["ttft_p99_s"]
    assert alone["replica_hours"] < warm["replica_hours"] < gpu["replica_hours"]


def test_step19_title_quotes_the_dashboards_peak_which_crosses_the_drawn_alert(pages):
    """The dashboard reaches the 36 s the title names: the title's number is the TTFT panel's computed peak (10 s
    window) to the whole second, the tile beside the panel shows that peak, the other TTFT p99 tile says it covers
    the whole run, and the peak lies far above the alert drawn on the panel, after the alert fired."""
    from calc import incident

    text = pages[STEP[19]]
    page = incident.alert_page()
    run_p99 = incident.incident_run().summary["ttft_p99_s"]
    # The title (and the intro's alert) name the panel's peak, rounded to a whole second: the lesson's 36 s.
    titles = re.findall(rf"TTFT p99 at ({_N}) seconds", text)
    assert titles and set(titles) == {str(round(page["peak_s"]))} and round(page["peak_s"]) == incident.TITLE_PEAK_S
    assert text.startswith(f"19. Incident: TTFT p99 at {titles[0]} seconds")
    # The dashboard's tiles: the peak under its own label, the run's p99 under another; no unlabelled TTFT p99.
    tile = re.search(rf"TTFT p99 at the peak \(10 s window\) ({_N}) s\b", text)
    assert tile and f"{tile.group(1)} s" == _seconds(page["peak_s"]) and round(_number(tile.group(1))) == int(titles[0])
    run_tile = re.search(rf"TTFT p99 over the run ({_N}) s\b", text)
    assert run_tile and f"{run_tile.group(1)} s" == _seconds(run_p99)
    intro = text.split("Try this")[0]  # the opening and the dashboard with its tiles
    assert not re.search(rf"TTFT p99 {_N} s", intro)
    # The intro quotes the panel's peak and when it came, which the panel crosses the alert well before.
    assert f"{_seconds(page['peak_s'])} at {page['peak_at_s']:g} s" in intro
    assert f"fires at {page['fired_s']:g} s" in intro
    assert page["peak_s"] > run_p99 > page["threshold_s"] and page["crossed_s"] < page["fired_s"] < page["peak_at_s"]
    assert f"at or above {_seconds(page['threshold_s'])} for {_seconds(page['for_s'])}" in intro
    # The TTFT panel of the built page draws the alert's threshold.
    built = (SITE / STEP[19] / "index.html").read_text(encoding="utf-8")
    figures = [html.unescape(f) for f in re.findall(r'data-figure="([^"]*)"', built)]
    ttft = [f for f in figures if "TTFT, 10 s window" in f]
    threshold = page["threshold_s"]
    assert ttft and all(f'"y0": {threshold}' in f or f'"y0":{threshold}' in f for f in ttft)


def test_step19_claim_fails_when_the_scenario_stops_reaching_the_title(pages, monkeypatch):
    """The title check reads calc's run, not the page's text: the scenario before this re-tune (documents of 16,000
    tokens on average, a peak of 28.2 s) fails it against today's page."""
    from calc import incident

    old = incident.incident_scenario(document_prompt_tokens=16000)
    from calc.sim.fleet import FleetScenario, simulate_fleet

    run = simulate_fleet(FleetScenario.from_dict(old))
    monkeypatch.setattr(incident, "incident_run", lambda **_: run)
    assert round(incident.alert_page()["peak_s"]) != incident.TITLE_PEAK_S
    with pytest.raises(AssertionError):
        test_step19_title_quotes_the_dashboards_peak_which_crosses_the_drawn_alert(pages)


def test_tiles_name_no_input_their_text_does_not_carry(pages):
    """Step 16's tiles and step 7's "after" tiles: the label stays when the input changes, so it names none."""
    assert "Cost at batch 10" not in pages[STEP[16]] and "Cost at your batch" in pages[STEP[16]]
    assert re.search(rf"Cost at your batch \${_N} per million output tokens at batch 10\b", pages[STEP[16]])
    assert "KV cache, fp8 " not in pages[STEP[7]] and "Weights per GPU, fp8" not in pages[STEP[7]]
    assert re.search(rf"KV cache, after {_N} tokens \(fp8\)", pages[STEP[7]])


def test_fp8_weights_give_one_count_on_steps_1_and_7():
    from calc.widgets import a_70b_assistant, fp8_weights

    step1 = a_70b_assistant.memory_view(weights="fp8")["outputs"]
    step7 = fp8_weights.memory_before_after()["outputs"]
    assert step1["kv_cache_tokens"]["value"] == step7["kv_tokens_after"]["value"]
    assert step1["weights_bytes_per_gpu"]["text"] == step7["weights_after"]["text"].split(" (")[0]


def test_step5_separates_room_from_what_the_traffic_fills(pages):
    from calc.widgets import paged_attention

    text = pages[STEP[5]]
    final = paged_attention._side_by_side_final()["outputs"]
    m = re.search(rf"has room for ({_N}) times as many requests\. This step's traffic fills ({_N}) times step 4's "
                  rf"batch \((\d+) against (\d+)\)", text)
    assert m
    room, fills, paged_max, contiguous_max = (_number(m.group(i)) for i in range(1, 5))
    assert (paged_max, contiguous_max) == (final["p_running_max"]["value"], final["c_running_max"]["value"])
    assert fills == pytest.approx(paged_max / contiguous_max, abs=0.05) and fills < room
    # The tile's share is of the reserved memory; the chart's "holding" line is a share of the whole cache.
    share = final["p_kv_token_share"]["text"]
    assert f"Reserved KV memory holding tokens, paged blocks {share}" in text
    peak = paged_attention.preset_summary(paged_attention.FIX_PRESET)["kv_use_peak"]
    assert peak * 100 < _number(share)


def test_tips_ask_for_what_the_widgets_show(pages):
    from calc.errors import CalcError
    from calc.widgets import a_70b_assistant, drill_kv_bytes, twice_the_traffic

    # Step 1: with fp8 two GPUs still hold the model, in bf16 they do not; the tip switches back first.
    assert a_70b_assistant.memory_view(weights="fp8", tp=2)["outputs"]["kv_cache_tokens"]["value"] > 0
    with pytest.raises(CalcError):
        a_70b_assistant.memory_view(weights="bf16", tp=2)
    tip = re.search(r"Try this (.*?) Takeaway", pages[STEP[1]]).group(1)
    assert tip.index("back to bf16") < tip.index("Tensor parallel to 2")
    # Step 6: the weights cost the same at the batches the tip names together, and more at the one it sets apart.
    tip = re.search(r"Try this (.*?)Quiz", pages[STEP[6]]).group(1)
    same = re.search(r"Set the batch to ([\d, then]+): the weights cost the same", tip).group(1)
    batches = [int(b) for b in re.findall(r"\d+", same)]
    weights_ms = {b: twice_the_traffic.step_cost(batch=b)["outputs"]["weights_ms"]["value"] for b in batches + [256]}
    assert len({round(weights_ms[b], 9) for b in batches}) == 1
    assert "At 256 the weights term grows too" in tip and weights_ms[256] > weights_ms[batches[-1]]
    # Step 3: the tip teaches the method, not the drill's answer.
    tip = re.search(r"Try this (.*?) Takeaway", pages[STEP[3]]).group(1)
    answer = drill_kv_bytes.bytes_per_token_drill(0)
    assert answer["answer_text"] not in tip and "KiB" not in tip


def test_terms_are_taught_where_they_are_first_used(pages):
    from tests.site.built_facts import built_facts

    # Continuous batching is defined on step 5, before step 6 uses it.
    assert "that is continuous batching" in pages[STEP[5]]
    assert "continuous batching" not in " ".join(pages[STEP[n]] for n in (1, 3)).lower()
    # The roofline and its ridge point are said in a sentence before step 6 uses them.
    six = pages[STEP[6]]
    assert six.index("ridge point (peak FLOP/s ÷ bandwidth)") <= six.index("ridge point")
    # Step 16's "compute-bound from batch N" is read against the derated ridge step 6 computes, and step 18 says so.
    ridge, achieved = (built_facts("twice_the_traffic")[k] for k in ("ridge", "achieved_ridge"))
    assert _number(achieved) < _number(ridge)
    for n in (16, 18):
        assert f"{achieved} " in pages[STEP[n]] and "derated" in pages[STEP[16]]


def test_smaller_words_that_contradicted_their_page(pages):
    from calc.widgets.framework import REGISTRY

    # 256 is vLLM's V0 default max_num_seqs; V1 defaults to 1,024 on H100-class GPUs: no page says it plainly.
    for page, text in pages.items():
        for m in re.finditer(r"vLLM's default `?max_num_seqs`?", text):
            assert "V0" in text[m.start():m.end() + 120], page
    assert "1,024" in pages["lesson/17-drill-price-a-replica/"]
    # Step 13's takeaway is about what a long context costs, not about FlashAttention.
    takeaway = re.search(r"Takeaway (.*?) Deeper:", pages[STEP[13]]).group(1)
    assert "FlashAttention" not in takeaway
    # Step 11's dashboards are not called healthy beside its full KV cache and long queue.
    assert "look healthy" not in pages[STEP[11]]
    # Step 18's "the two layouts need the same GPUs at 40 requests/s" holds in its own widget.
    sizing = REGISTRY["disaggregation.pool_sizing"].function
    at_40, default = sizing(rate_per_s=40)["outputs"], sizing()["outputs"]
    assert "40 requests/s in the widget and the two layouts need the same GPUs" in pages[STEP[18]]
    colocated = lambda out: int(re.match(r"(\d+) replica", out["colocated_replicas"]["text"]).group(1)) * 4  # noqa: E731
    gpus = lambda out: int(out["gpus_split"]["text"].split()[0])  # noqa: E731
    assert gpus(at_40) == colocated(at_40) and gpus(default) > colocated(default)
    # No internal preset name outside a page's Sources.
    for page, text in pages.items():
        if page.startswith("lesson/"):
            body = text.split(" Sources ")[0]
            assert "step20-pools" not in body, page
    # The accuracy page's two phrases.
    assert "the target is every target" not in pages["accuracy/"] and "the issue's targets" not in pages["accuracy/"]


@pytest.mark.parametrize("check, step, old, new", [
    (test_step19_title_quotes_the_dashboards_peak_which_crosses_the_drawn_alert, 19,
     "Incident: TTFT p99 at 36 seconds", "Incident: TTFT p99 at 26.6 seconds"),      # the previous title (run's p99)
    (test_step19_title_quotes_the_dashboards_peak_which_crosses_the_drawn_alert, 19,
     "TTFT p99 over the run", "TTFT p99"),                                           # an unlabelled tile
    (test_step15_right_signal_with_right_sized_headroom_beats_gpu_util_on_both, 15,
     "So keep 2 replicas of warm headroom", "So keep 1 replica of warm headroom"),  # headroom not the computed one
    (test_tiles_name_no_input_their_text_does_not_carry, 16, "Cost at your batch", "Cost at batch 10"),
    (test_step5_separates_room_from_what_the_traffic_fills, 5, "fills 2.4 times", "fills 6.48 times"),
    (test_tips_ask_for_what_the_widgets_show, 6, "Set the batch to 1, then 64:", "Set the batch to 1, then 64, then 256:"),
    (test_smaller_words_that_contradicted_their_page, 13, "¶ A long context costs", "¶ FlashAttention: a long context costs"),
])
def test_a_story_claim_that_breaks_is_caught(pages, check, step, old, new):
    """Each claim check fails on the page text the issue found (or a like break), in a copy of the pages."""
    page = STEP[step]
    assert old in pages[page], (page, old)
    with pytest.raises(AssertionError):
        check({**pages, page: pages[page].replace(old, new, 1)})

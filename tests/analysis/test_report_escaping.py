"""The report escapes every field it did not write (issue 51, item 4): ``report.md`` of an import whose names
and instructions carry HTML, links, images and backticks, rendered by mistune's default renderer (which
passes raw HTML through, as nbconvert uses it), holds no element, attribute or fetch the data asked for;
the text still reads as written."""

from __future__ import annotations

import json
import re

from dvoc_bench import report
from tests.support import import_or_need

PAYLOADS = {
    "model": "<img src=x onerror=alert(1)>",
    "task": "t`<script>document.title='pwned'</script>`",
    "sample_instruction": "![x](http://127.0.0.1:9/canary) <iframe src=//127.0.0.1:9/f></iframe>",
}


def test_report_md_rendered_by_mistune_runs_no_html(tmp_path, capsys):
    mistune = import_or_need("JUPYTER", "mistune", "installed with nbconvert (the dev extra)")
    box = {"target_x0": 0, "target_y0": 0, "target_x1": 10, "target_y1": 10, "final_x": 5, "final_y": 5}
    rows = [{"schema_version": 1, "method": m, **box, "scene_kind": "dataset", "sample_dataset": "x",
             **PAYLOADS, "trial_key": m + "[y](javascript:alert(2))",
             "status": "error" if m == "oneshot" else "ok",
             "error": "<svg onload=alert(3)> ![z](http://127.0.0.1:9/e)"}
            for m in ("oneshot", "dvoc")]  # fmt: skip
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "rep"
    assert report.main(["--import", str(path), "--out", str(out), "--no-figures", "--n-boot", "20"]) == 0
    capsys.readouterr()
    md = (out / "report.md").read_text(encoding="utf-8")
    html = mistune.html(md)
    tags = set(re.findall(r"<\s*([a-zA-Z]+)", html))
    assert not tags & {"img", "script", "iframe", "svg", "a"}, sorted(tags)
    assert not re.search(r"<[^>]*\son\w+=", html)  # no event attribute inside any tag
    assert "127.0.0.1:9" not in re.sub(r"&[a-z]+;|[^<>]*", "", html)  # no URL inside a tag
    assert "&lt;img src=x onerror=alert(1)&gt;" in html  # the name reads as written

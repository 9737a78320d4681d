"""docs/frames.md carries the frames table generated from conf/model/ (``python -m dvoc_bench.coords
--table``), and the table says what the configs declare."""

from __future__ import annotations

import shutil

from dvoc_bench.coords import main
from dvoc_bench.models.frames_doc import BEGIN, END, frames_table, with_table
from tests.support import ROOT

PAGE = ROOT / "docs" / "frames.md"


def test_the_page_carries_the_table_of_the_configs():
    page = PAGE.read_text(encoding="utf-8")
    assert BEGIN in page and END in page
    assert page == with_table(page, frames_table(ROOT / "conf" / "model")), (
        "docs/frames.md is out of date: paste `python -m dvoc_bench.coords --table` between its markers"
    )


def test_the_table_follows_a_config_change(tmp_path):
    models = tmp_path / "model"
    shutil.copytree(ROOT / "conf" / "model", models)
    before = frames_table(models)
    f = models / "vllm-qwen3-vl-8b.yaml"
    f.write_text(f.read_text(encoding="utf-8").replace("factor: 32", "factor: 28"), encoding="utf-8")
    after = frames_table(models)
    assert before != after
    row = next(r for r in after.splitlines() if "`vllm-qwen3-vl-8b`" in r)
    assert "| 0–1000 | x, y | u·W/top | smart_resize, factor 28, 65,536–16,777,216 px" in row
    assert "`computer_use` / `left_click` tool call `coordinate`" in row  # the forms its reader takes
    gem = next(r for r in after.splitlines() if "`gemini-2.5-flash-point`" in r)
    assert "| y, x |" in gem


def test_the_mapping_column_follows_the_declaration(tmp_path):
    models = tmp_path / "model"
    shutil.copytree(ROOT / "conf" / "model", models)
    f = models / "vllm-os-atlas-7b.yaml"
    f.write_text(f.read_text(encoding="utf-8").replace("mapping: edge", "mapping: last_pixel"), "utf-8")
    table = frames_table(models).splitlines()
    row = next(r for r in table if "`vllm-os-atlas-7b`" in r)
    assert "| u·(W−1)/top |" in row and "coordinate_space_transformer" in row
    tianxi = next(r for r in table if "`vllm-tianxi-action-7b`" in r)
    assert "| pixels of the image seen | x, y | as read |" in tianxi
    assert "| downscale to ≤ 7,494,400 px, padded to a multiple of 28 |" in tianxi


def test_the_door_prints_the_table(capsys):
    assert main(["--table"]) == 0
    assert capsys.readouterr().out.strip() == frames_table(ROOT / "conf" / "model")

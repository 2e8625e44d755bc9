"""Every registered figure draws (quick mode) and is written as PNG and PDF."""
from paper_figs import registry as figreg


def test_figure_registry_and_remark2(tmp_path):
    figs = figreg.discover()
    assert "nd.remark2_det_ratio" in figs
    out = figreg.render(figs["nd.remark2_det_ratio"], tmp_path, quick=True)
    assert out["png"].stat().st_size > 10_000 and out["pdf"].exists()

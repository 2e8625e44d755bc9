"""Generate verify/catalog.toml from ../shared/CLAIMS.md (run once by a developer; the result is committed).

    python tools/gen_catalog.py [path/to/CLAIMS.md]

The package never reads ../shared at run time: the catalog is data inside the repo.
"""
import re
import sys
from pathlib import Path

PAPERS = {
    "ND": "Neural Dependencies Emerging from Learning Massive Categories (seed 000)",
    "VC": "Quantifying the Variability Collapse of Neural Networks (seed 001)",
    "FG": "Why Fine-grained Labels in Pretraining Benefit Generalization? (seed 002)",
    "RD": "Rank Diminishing in Deep Neural Networks (seed 004)",
}


def toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(src: Path, dst: Path) -> None:
    paper = None
    rows = []
    for line in src.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^## (ND|VC|FG|RD)\b", line)
        if m:
            paper = m.group(1)
            continue
        m = re.match(r"^\| ([a-z]{2}\.[a-z0-9_]+) \| (.*) \| ([a-z +]+) \|$", line)
        if m and paper:
            cid, claim, kind = m.groups()
            rows.append((cid, paper, claim.strip(), kind.replace(" ", "")))
    out = ["# Generated from CLAIMS.md by tools/gen_catalog.py. Do not edit by hand.", ""]
    for key, title in PAPERS.items():
        out.append(f"[papers.{key}]\ntitle = {toml_str(title)}\n")
    for cid, paper, claim, kind in rows:
        out += ["[[claim]]", f"id = {toml_str(cid)}", f"paper = {toml_str(paper)}",
                f"kind = {toml_str(kind)}", f"claim = {toml_str(claim)}", ""]
    dst.write_text("\n".join(out), encoding="utf-8")
    print(f"{len(rows)} claims -> {dst}")


if __name__ == "__main__":
    here = Path(__file__).resolve().parent.parent
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else here.parent / "shared" / "CLAIMS.md"
    main(src, here / "verify" / "catalog.toml")

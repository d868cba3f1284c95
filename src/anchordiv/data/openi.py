"""The Open-i (Indiana University) chest X-ray reports as a labelled retrieval dataset.

Read from ``NLMCXR_reports.tgz``, the data file shipped inside the ``torchxrayvision`` wheel
(located with importlib, never imported: the package pulls heavy dependencies).  Each report's
text is its FINDINGS and IMPRESSION sections joined; reports with neither are dropped (28 of
3,955).  Labels are the reports' MeSH *major* headings (the part before the first ``/``:
``"Opacity/lung/upper lobe/right"`` -> ``"Opacity"``), keeping headings that label at least
``min_count`` reports, plus ``"normal"``; ``"No Indexing"`` is not a label.
"""

from __future__ import annotations

import collections
import functools
import tarfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import AnchorDivError
from .clinical import finding_spec, package_file

SECTIONS = ("FINDINGS", "IMPRESSION")
NOT_A_LABEL = {"No Indexing"}


@dataclass(frozen=True)
class Reports:
    """``texts`` (n), ``labels`` ``[n, L]`` bool, ``label_names`` (L), ``uids`` (n)."""
    texts: list[str]
    labels: np.ndarray
    label_names: list[str]
    uids: list[str]

    def __len__(self) -> int:
        return len(self.texts)

    def label(self, name: str) -> np.ndarray:
        """``[n]`` bool column of one MeSH heading."""
        if name not in self.label_names:
            raise AnchorDivError(f"label: unknown {name!r}; have {self.label_names}")
        return self.labels[:, self.label_names.index(name)]

    def finding(self, finding: str) -> np.ndarray:
        """``[n]`` bool: the report carries any MeSH heading of a chest finding in
        :data:`anchordiv.data.clinical.FINDINGS` (e.g. ``"opacity"``)."""
        cols = [self.label_names.index(m) for m in finding_spec(finding).mesh
                if m in self.label_names]
        if not cols:
            raise AnchorDivError(f"finding {finding!r}: none of its MeSH headings is a label "
                                 f"here (lower min_count)")
        return self.labels[:, cols].any(axis=1)


def reports_path() -> Path:
    return package_file("torchxrayvision", "data", "NLMCXR_reports.tgz",
                        install="pip install --no-deps torchxrayvision "
                                "(only its data file is read)")


def parse_report(xml_bytes: bytes) -> tuple[str, str, list[str]]:
    """``(uid, text, mesh_major_headings)`` of one report XML."""
    root = ET.fromstring(xml_bytes)
    sec = {a.get("Label"): " ".join((a.text or "").split()) for a in root.iter("AbstractText")}
    text = " ".join(sec[s] for s in SECTIONS if sec.get(s))
    heads = sorted({m.text.split("/")[0].strip() for m in root.findall(".//MeSH/major")
                    if m.text})
    uid = root.find("uId")
    return (uid.get("id") if uid is not None else ""), text, heads


def _parsed(path: str) -> tuple:
    """Parsed reports of ``path``, cached per (path, size, modification time)."""
    try:
        st = Path(path).stat()
    except OSError as err:
        raise AnchorDivError(f"cannot read Open-i reports from {path}: {err}") from None
    return _parse_file(path, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _parse_file(path: str, size: int, mtime_ns: int) -> tuple:
    out = []
    try:
        with tarfile.open(path, "r:gz") as tf:
            for m in sorted(tf.getmembers(), key=lambda m: m.name):
                if m.isfile() and m.name.endswith(".xml"):
                    out.append(parse_report(tf.extractfile(m).read()))
    except (tarfile.TarError, OSError, ET.ParseError) as err:
        raise AnchorDivError(f"cannot read Open-i reports from {path}: {err}") from None
    if not out:
        raise AnchorDivError(f"{path}: contains no report XML files")
    return tuple(out)


def load_reports(path=None, min_count: int = 20) -> Reports:
    """The Open-i reports with text, as texts + a ``[n, L]`` MeSH-heading label matrix."""
    rows = [r for r in _parsed(str(path or reports_path())) if r[1]]
    counts = collections.Counter(h for _, _, heads in rows for h in heads)
    names = sorted(h for h, c in counts.items()
                   if (c >= min_count or h == "normal") and h not in NOT_A_LABEL)
    col = {h: j for j, h in enumerate(names)}
    labels = np.zeros((len(rows), len(names)), dtype=bool)
    for i, (_, _, heads) in enumerate(rows):
        labels[i, [col[h] for h in heads if h in col]] = True
    return Reports([r[1] for r in rows], labels, names, [r[0] for r in rows])

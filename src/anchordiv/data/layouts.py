"""Image datasets on disk, read in their own published layouts (read-only, nothing downloaded):
one adapter per layout (:data:`LAYOUTS`) returns an :class:`ImageDataset` with labels and a
query/gallery split (the layouts and split rules: ``docs/guides/images.md``)."""

from __future__ import annotations

import csv
import dataclasses
import os
import re
import warnings
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import AnchorDivError, user_stacklevel


#: File suffixes read as images.
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp"})

#: Fraction of each class drawn as queries where the dataset ships no split.
QUERY_FRACTION = 0.2

#: The 14 CheXpert observation columns, in the CSVs' order.
CHEXPERT_LABELS = tuple(
    "No Finding, Enlarged Cardiomediastinum, Cardiomegaly, Lung Opacity, Lung Lesion, Edema, "
    "Consolidation, Pneumonia, Atelectasis, Pneumothorax, Pleural Effusion, Pleural Other, "
    "Fracture, Support Devices".split(", ")
)

#: CheXpert columns with pathology anchors -> the finding of :mod:`anchordiv.data.clinical`
#: (the others have no HPO / ICD-10-CM anchor set there).
CHEXPERT_FINDINGS = {
    "Cardiomegaly": "cardiomegaly",
    "Lung Opacity": "opacity",
    "Edema": "edema",
    "Atelectasis": "atelectasis",
    "Pneumothorax": "pneumothorax",
    "Pleural Effusion": "pleural effusion",
    "Support Devices": "support devices",
}

#: ImageNet-R file-name prefixes whose readable style differs from the prefix.
RENDITION_NAMES = {"videogame": "video game", "graphic": "graphics"}


@dataclasses.dataclass
class ImageDataset:
    """Image files with their labels and query/gallery split, as one layout reads them.

    Attributes
    ----------
    layout : str
        The layout name (``"imagenet-r"``).
    root : Path
        The dataset folder.
    paths : list of str, length n
        Image files, in a fixed order (sorted within each class).
    query : numpy.ndarray of bool, shape [n]
        True: a query; False: a gallery image.
    split_source : str
        How the split was made (the dataset's own files or a seeded draw).
    class_names : list of str, length C
        Readable class names, for prompts (empty when the dataset has no classes).
    class_ids : list of str, length C
        The dataset's own class ids (folder names, wnids, CUB ids).
    label : numpy.ndarray of int, shape [n], or None
        Class index of each image.
    renditions : list of str
        Rendition names (styles, or "photo"/"sketch"); empty when there are none.
    rendition : numpy.ndarray of int, shape [n], or None
        Rendition index of each image.
    pathologies : list of str
        Pathology (observation) names; empty when there are none.
    pathology : numpy.ndarray of bool, shape [n, L], or None
        Pathology labels under the stated uncertainty policy.
    """

    layout: str
    root: Path
    paths: list[str]
    query: np.ndarray
    split_source: str
    class_names: list[str] = dataclasses.field(default_factory=list)
    class_ids: list[str] = dataclasses.field(default_factory=list)
    label: np.ndarray | None = None
    renditions: list[str] = dataclasses.field(default_factory=list)
    rendition: np.ndarray | None = None
    pathologies: list[str] = dataclasses.field(default_factory=list)
    pathology: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.paths)

    def subset(self, rows) -> ImageDataset:
        """The images at ``rows`` (int indices), every per-image field cut alike."""
        rows = np.asarray(rows, dtype=int)

        def cut(a):
            return None if a is None else np.asarray(a)[rows]

        return dataclasses.replace(
            self,
            paths=[self.paths[i] for i in rows],
            query=self.query[rows],
            label=cut(self.label),
            rendition=cut(self.rendition),
            pathology=cut(self.pathology),
        )

    def summary(self) -> dict:
        """Counts for reports and sidecars: images, queries, classes, renditions, pathologies."""
        return {
            "layout": self.layout,
            "root": str(self.root),
            "images": len(self),
            "queries": int(self.query.sum()),
            "gallery": int((~self.query).sum()),
            "classes": len(self.class_names),
            "renditions": list(self.renditions),
            "pathologies": list(self.pathologies),
            "split": self.split_source,
        }


def seeded_split(label, fraction: float = QUERY_FRACTION, seed: int = 0) -> np.ndarray:
    """Query mask drawing ``round(fraction · n_c)`` (at least 1) images of each class as queries.

    A class of a single image keeps it in the gallery.

    Parameters
    ----------
    label : array_like of int, shape [n]
        Class of each image.
    fraction : float, default 0.2
        Fraction of each class drawn as queries.
    seed : int, default 0
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    numpy.ndarray of bool, shape [n]
        True for queries.

    Examples
    --------
    >>> from anchordiv.data.layouts import seeded_split
    >>> seeded_split([0, 0, 0, 0, 0, 1, 1, 2]).astype(int).tolist()
    [0, 0, 0, 0, 1, 0, 1, 0]
    """
    label = np.asarray(label)
    rng = np.random.default_rng(seed)
    query = np.zeros(len(label), bool)
    for c in np.unique(label):
        rows = np.flatnonzero(label == c)
        if len(rows) >= 2:
            k = min(len(rows) - 1, max(1, int(round(fraction * len(rows)))))
            query[rng.choice(rows, k, replace=False)] = True
    return query


def _images_in(folder: Path) -> list[Path]:
    """The image files of ``folder``, sorted; a symlink whose target is gone is kept (the
    file check names it and its target, never a silent drop)."""
    return sorted(
        p
        for p in folder.iterdir()
        if (p.is_file() or (p.is_symlink() and not p.exists()))
        and p.suffix.lower() in IMAGE_SUFFIXES
    )


def _dir(root, what: str) -> Path:
    root = Path(root).expanduser()
    if root.exists() and not root.is_dir():
        raise AnchorDivError(
            f"{what}: {root} is a file, not a folder; pass the dataset folder "
            f"({what}:{root.parent} holds it)"
        )
    if not root.is_dir():
        raise AnchorDivError(f"{what}: dataset folder not found: {root}")
    return root


#: Files that mark a folder as something anchordiv wrote (a report, a saved bundle, embeddings),
#: never a class of images.
OUTPUT_MARKERS = ("report.md", "card.json", "embeddings/images.json")


def output_folder(folder: Path) -> str | None:
    """The marker file that shows ``folder`` is an anchordiv output (a report written with
    ``-o ROOT/results``, a saved bundle), or None for a folder that may be a class."""
    return next((m for m in OUTPUT_MARKERS if (folder / m).is_file()), None)


def _subdirs(root: Path, warn: bool = False) -> list[Path]:
    """The subfolders of ``root`` that may hold images: hidden folders and anchordiv outputs
    (:func:`output_folder`; each named in a warning when ``warn``) are left out."""
    out = []
    for p in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        marker = output_folder(p)
        if marker is None:
            out.append(p)
        elif warn:
            warnings.warn(
                f"dataset: {p} is not read as a class: it holds {marker}, an anchordiv output; "
                f"write reports outside the dataset folder {root}",
                stacklevel=user_stacklevel(),
            )
    return out


def class_root(root: Path, what: str) -> Path:
    """The folder of class folders: ``root`` itself, or — when ``root`` is one level too
    high — its only subfolder whose subfolders hold images (a warning says so).  ``root`` one
    level too low (a class folder: images, no subfolders) and several candidates are errors
    that say where the dataset is."""
    folders = _subdirs(root)
    if not folders and _images_in(root):
        raise AnchorDivError(
            f"{what}: {root} holds images, not class folders: it looks like one class; the "
            f"dataset is probably its parent, {what}:{root.parent}"
        )
    if not folders or any(_images_in(f) for f in folders):
        return root
    below = [f for f in folders if any(_images_in(g) for g in _subdirs(f)[:20])]
    if len(below) == 1:
        warnings.warn(
            f"{what}: {root} holds no class folders; reading {below[0]}, whose subfolders "
            f"hold images (pass {what}:{below[0]} to say so)",
            stacklevel=user_stacklevel(),
        )
        return below[0]
    if below:
        raise AnchorDivError(
            f"{what}: the folders of {root} hold no images, only folders of images: either "
            f"several datasets of class folders ({', '.join(f.name for f in below[:5])}"
            f"{', ...' if len(below) > 5 else ''}) — pass one, e.g. {what}:{below[-1]} — "
            f"or classes whose images lie one level deeper (in {below[0].name}/"
            f"{_subdirs(below[0])[0].name}/), which {what} does not read: move each class's "
            f"images up into its class folder"
        )
    return root


def _class_folders(root: Path, what: str) -> list[tuple[str, list[Path]]]:
    """``[(folder name, images)]`` for every subfolder of ``root`` (anchordiv outputs left out,
    with a warning); an empty class is an error."""
    folders = _subdirs(root, warn=True)
    if not folders:
        raise AnchorDivError(f"{what}: {root} has no class folders (one folder per class)")
    out = []
    for f in folders:
        images = _images_in(f)
        if not images:
            raise AnchorDivError(
                f"{what}: class folder {f} holds no images ({', '.join(sorted(IMAGE_SUFFIXES))})"
            )
        out.append((f.name, images))
    return out


def _folders(root, what: str) -> tuple[Path, list[str], np.ndarray, list[str]]:
    """``(class root, paths, label, folder names)`` of a folder-per-class dataset."""
    root = class_root(root, what)
    classes = _class_folders(root, what)
    paths = [str(p) for _, images in classes for p in images]
    label = np.repeat(np.arange(len(classes)), [len(images) for _, images in classes])
    return root, paths, label, [c for c, _ in classes]


def _seeded(layout: str, root: Path, paths, label, seed: int, ids, names, **fields) -> ImageDataset:
    return ImageDataset(
        layout,
        root,
        paths,
        seeded_split(label, QUERY_FRACTION, seed),
        f"seeded: {QUERY_FRACTION:.0%} of each class as queries (seed {seed})",
        class_names=names,
        class_ids=ids,
        label=label,
        **fields,
    )


def imagefolder(root, seed: int = 0) -> ImageDataset:
    """One folder per class (``ROOT/<class>/*.jpg``); names: folder names, ``_`` as space.

    Parameters
    ----------
    root : str or Path
        The dataset folder.
    seed : int, default 0
        Seed of the query/gallery split (:func:`seeded_split`).

    Returns
    -------
    ImageDataset
        Classes and a seeded split.
    """
    root, paths, label, ids = _folders(_dir(root, "imagefolder"), "imagefolder")
    names = [c.replace("_", " ") for c in ids]
    odd = [c for c in ids if not _WNID.match(c)]
    if odd and len(odd) <= len(ids) // 2:
        warnings.warn(
            f"imagefolder: {len(ids) - len(odd)} of the {len(ids)} class folders are WordNet ids "
            f"but {', '.join(repr(c) for c in odd[:3])}{' ...' if len(odd) > 3 else ''} "
            f"{'is' if len(odd) == 1 else 'are'} not, so every class is named by its folder "
            f"name (the wnids become raw prompts); move {'it' if len(odd) == 1 else 'them'} out "
            f"of {root} to name the classes from WordNet",
            stacklevel=user_stacklevel(),
        )
    if not odd:
        warnings.warn(
            f"imagefolder: the class folders are WordNet ids ({', '.join(ids[:2])}, ...): class "
            f"names and prompts from WordNet, as the imagenet layout reads them (use "
            f"imagenet:{root} to say so)",
            stacklevel=user_stacklevel(),
        )
        names = wnid_names(ids)
    return _seeded("imagefolder", root, paths, label, seed, ids, names)


_WNID = re.compile(r"^n\d{8}$")


def wnid_names(wnids) -> list[str]:
    """Readable names of wnids: the shipped ILSVRC-2012 name, else the synset's first lemma.

    Parameters
    ----------
    wnids : sequence of str
        WordNet ids (``n01440764``).

    Returns
    -------
    list of str
        One name per wnid.

    Raises
    ------
    AnchorDivError
        A folder name that is no wnid, or a wnid WordNet lacks.
    """
    import collections

    from . import imagenet

    first = {w: names[0] for w, names in imagenet.synonyms()}
    twice = {n for n, k in collections.Counter(first.values()).items() if k > 1}
    out = []
    for w in wnids:
        if not _WNID.match(w):
            raise AnchorDivError(
                f"class folder {w!r} is not a WordNet id (n + 8 digits); use imagefolder:ROOT "
                f"for folders named by class"
            )
        if w in first:  # WordNet loads only when needed
            out.append(first[w] if first[w] not in twice else dict(imagenet.classes())[w])
        else:
            from . import wordnet

            try:
                with warnings.catch_warnings():  # nltk warns, then returns None
                    warnings.simplefilter("ignore")
                    found = wordnet.synset(w)
                if found is None:
                    raise AnchorDivError(w)
                out.append(wordnet.readable(found))
            except (AnchorDivError, AttributeError, ValueError):
                raise AnchorDivError(
                    f"class folder {w!r}: WordNet 3.0 has no noun synset with this id (offset "
                    f"{int(w[1:])}); check the folder's name (ImageNet's wnids are WordNet 3.0 "
                    f"noun offsets)"
                ) from None
    return out


def imagenet(root, seed: int = 0) -> ImageDataset:
    """ILSVRC-2012 validation images in wnid folders (``ROOT/n01440764/*.JPEG``).

    Parameters
    ----------
    root : str or Path
        The ``val`` folder.
    seed : int, default 0
        Seed of the query/gallery split (:func:`seeded_split`).

    Returns
    -------
    ImageDataset
        Classes (wnids, names from the shipped ILSVRC list / WordNet) and a seeded split.
    """
    root = _dir(root, "imagenet")
    if not _subdirs(root) and _images_in(root):
        return _flat_imagenet(root, seed)
    root, paths, label, ids = _folders(root, "imagenet")
    return _seeded("imagenet", root, paths, label, seed, ids, wnid_names(ids))


#: a one-line recipe that sorts ILSVRC-2012's flat validation folder into wnid folders
VALPREP = (
    "cd ROOT && wget -qO- https://raw.githubusercontent.com/soumith/imagenetloader.torch/"
    "master/valprep.sh | bash"
)


#: how many folders above a flat validation folder ``LOC_val_solution.csv`` is looked for:
#: Kaggle's release keeps it four above ``ILSVRC/Data/CLS-LOC/val``
LOC_LEVELS = 4


def _flat_imagenet(root: Path, seed: int) -> ImageDataset:
    """ILSVRC-2012's validation images in one folder, labelled by ``LOC_val_solution.csv``
    (Kaggle's release: ``ImageId,PredictionString`` whose first word is the wnid) in ROOT or
    one of its :data:`LOC_LEVELS` parents (Kaggle's own layout puts it four levels above
    ``ILSVRC/Data/CLS-LOC/val``)."""
    bases = [root, *list(root.resolve().parents)[:LOC_LEVELS]]
    labels = next(
        (b / "LOC_val_solution.csv" for b in bases if (b / "LOC_val_solution.csv").is_file()), None
    )
    if labels is None:
        raise AnchorDivError(
            f"imagenet: {root} holds images but no wnid folders, and no LOC_val_solution.csv "
            f"labels them: put Kaggle's LOC_val_solution.csv in {root} (or in one of the "
            f"{LOC_LEVELS} folders above it, where Kaggle's layout keeps it), or sort the images "
            f"into wnid folders with: {VALPREP}"
        )
    wnid_of = _loc_labels(labels)
    images = _images_in(root)
    missing = [p.name for p in images if p.stem not in wnid_of]
    if missing:
        raise AnchorDivError(
            f"imagenet: {len(missing)} image(s) of {root} have no row in {labels}, e.g. "
            f"{missing[0]}"
        )
    ids = sorted({wnid_of[p.stem] for p in images})
    index = {w: k for k, w in enumerate(ids)}
    order = sorted(images, key=lambda p: (index[wnid_of[p.stem]], p.name))
    label = np.array([index[wnid_of[p.stem]] for p in order])
    paths = [str(p) for p in order]
    return _seeded("imagenet", root, paths, label, seed, ids, wnid_names(ids))


def _loc_labels(path: Path) -> dict[str, str]:
    """``{ImageId: wnid}`` of a ``LOC_val_solution.csv`` (the first word of each row's
    ``PredictionString``), refused when a column is missing, a row has no wnid, or an image
    has rows of two wnids."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in ("ImageId", "PredictionString") if c not in (reader.fieldnames or [])]
        if missing:
            raise AnchorDivError(
                f"imagenet: {path} lacks column(s) {', '.join(missing)} (its columns: "
                f"{', '.join(reader.fieldnames or []) or 'none'}); Kaggle's LOC_val_solution.csv "
                f"has ImageId,PredictionString, the wnid first in each PredictionString"
            )
        out: dict[str, str] = {}
        for k, row in enumerate(reader):
            words = (row["PredictionString"] or "").split()
            image = (row["ImageId"] or "").strip()
            if not words or not image:
                raise AnchorDivError(
                    f"imagenet: {path} line {k + 2}: {'no ImageId' if not image else 'no wnid'} "
                    f"(ImageId {image!r}, PredictionString {row['PredictionString']!r}); each row "
                    f"names an image and starts its PredictionString with the image's wnid"
                )
            if out.get(image, words[0]) != words[0]:
                raise AnchorDivError(
                    f"imagenet: {path} line {k + 2}: image {image} is labelled twice, "
                    f"{out[image]} and {words[0]}; keep one row per image"
                )
            out[image] = words[0]
    return out


def rendition_of(path) -> str:
    """An ImageNet-R image's rendition: its file name before the last ``_`` (``art_0.jpg`` →
    "art"), readable (``videogame`` → "video game").

    Parameters
    ----------
    path : str or Path
        The image file.

    Returns
    -------
    str
        The rendition.

    Examples
    --------
    >>> from anchordiv.data.layouts import rendition_of
    >>> rendition_of("n01443537/videogame_12.jpg"), rendition_of("x/art_0.jpg")
    ('video game', 'art')
    """
    stem = Path(path).stem
    if "_" not in stem or not stem.rsplit("_", 1)[0]:
        raise AnchorDivError(
            f"imagenet-r: file {path} does not start with its rendition ('art_0.jpg', "
            f"'cartoon_3.jpg', ...)"
        )
    prefix = stem.rsplit("_", 1)[0].lower()
    return RENDITION_NAMES.get(prefix, prefix.replace("_", " "))


def imagenet_r(root, seed: int = 0) -> ImageDataset:
    """ImageNet-R: wnid folders of renditions named ``<rendition>_<k>.jpg``.

    Parameters
    ----------
    root : str or Path
        The ``imagenet-r`` folder.
    seed : int, default 0
        Seed of the query/gallery split (:func:`seeded_split`).

    Returns
    -------
    ImageDataset
        Classes, renditions (sorted) and a seeded split.
    """
    root, paths, label, ids = _folders(_dir(root, "imagenet-r"), "imagenet-r")
    styles = [rendition_of(p) for p in paths]
    kinds = sorted(set(styles))
    at = np.array([kinds.index(s) for s in styles])
    return _seeded(
        "imagenet-r", root, paths, label, seed, ids, wnid_names(ids), renditions=kinds, rendition=at
    )


def _table(path: Path, columns: int, what: str) -> list[list[str]]:
    """Whitespace-separated rows of a CUB metadata file, each with ``columns`` fields."""
    if not path.is_file():
        raise AnchorDivError(f"{what}: missing file {path}")
    rows = [ln.split(maxsplit=columns - 1) for ln in path.read_text().splitlines() if ln.strip()]
    bad = [i for i, r in enumerate(rows) if len(r) != columns]
    if bad:
        raise AnchorDivError(
            f"{what}: {path} line {bad[0] + 1} has {len(rows[bad[0]])} field(s), not {columns}"
        )
    return rows


def _unique(path: Path) -> dict[str, str]:
    """``{id: value}`` of a two-column CUB file whose ids are unique (an id on two lines is an
    error naming both)."""
    out: dict[str, str] = {}
    lines: dict[str, int] = {}
    for k, (i, v) in enumerate(_table(path, 2, "cub200")):
        if i in out:
            what = "class" if path.name == "classes.txt" else "image"
            raise AnchorDivError(
                f"cub200: {path}: {what} id {i} is listed twice (lines {lines[i] + 1} and "
                f"{k + 1}); each id names one line"
            )
        out[i], lines[i] = v, k
    return out


def cub200(root, seed: int = 0) -> ImageDataset:
    """CUB-200-2011 from its metadata files; queries: its test images, gallery: its training
    images (``train_test_split.txt``).

    Parameters
    ----------
    root : str or Path
        ``CUB_200_2011`` (or the folder holding it).
    seed : int, default 0
        Unused (the dataset ships its split); accepted like every layout's.

    Returns
    -------
    ImageDataset
        200 classes (names from ``classes.txt``: ``001.Black_footed_Albatross`` →
        "Black footed Albatross") and the official split.
    """
    root = _dir(root, "cub200")
    if not (root / "images.txt").is_file() and (root / "CUB_200_2011").is_dir():
        root = root / "CUB_200_2011"
    images = _unique(root / "images.txt")
    classes = list(_unique(root / "classes.txt").items())
    labels = _unique(root / "image_class_labels.txt")
    train = _unique(root / "train_test_split.txt")
    odd = next(((i, t) for i, t in train.items() if t not in ("0", "1")), None)
    if odd:
        raise AnchorDivError(
            f"cub200: {root / 'train_test_split.txt'}: image id {odd[0]} has split {odd[1]!r}, "
            f"not 1 or 0 (1 = training image, 0 = test image)"
        )
    ids = [c for c, _ in classes]
    index = {c: k for k, c in enumerate(ids)}
    missing = [i for i in images if i not in labels or i not in train]
    if missing:
        raise AnchorDivError(
            f"cub200: image id {missing[0]} has no class or split entry "
            f"(image_class_labels.txt / train_test_split.txt)"
        )
    order = sorted(images, key=lambda i: (index.get(labels[i], -1), images[i]))
    paths = [root / "images" / images[i] for i in order]
    absent = [p for p in paths if not p.is_file()]
    if absent:
        raise AnchorDivError(f"cub200: {len(absent)} listed image(s) missing, e.g. {absent[0]}")
    unknown = sorted({labels[i] for i in order} - set(index))
    if unknown:
        raise AnchorDivError(f"cub200: class id(s) {unknown[:3]} are not in classes.txt")
    label = np.array([index[labels[i]] for i in order])
    empty = [ids[k] for k in range(len(ids)) if not (label == k).any()]
    if empty:
        raise AnchorDivError(f"cub200: class(es) {empty[:3]} have no images")
    names = [re.sub(r"^\d+\.", "", n).replace("_", " ") for _, n in classes]
    return ImageDataset(
        "cub200",
        root,
        [str(p) for p in paths],
        np.array([train[i] == "0" for i in order]),
        "the dataset's train_test_split.txt: test images are queries, training images the gallery",
        class_names=names,
        class_ids=[n for _, n in classes],
        label=label,
    )


def _modality(root: Path, name: str) -> Path:
    base = root / name
    if not base.is_dir():
        raise AnchorDivError(f"sketchy: missing folder {base} (expected photo/ and sketch/)")
    tx = sorted(p for p in base.iterdir() if p.is_dir() and p.name.startswith("tx_"))
    return tx[0] if tx else base


def sketchy(root, seed: int = 0) -> ImageDataset:
    """Sketchy: ``photo/<class>/`` and ``sketch/<class>/``; queries: sketches, gallery: photos.

    Parameters
    ----------
    root : str or Path
        The folder holding ``photo/`` and ``sketch/`` (``rendered_256x256/256x256``), or the
        release's ``rendered_256x256`` or its parent.
    seed : int, default 0
        Unused (the modalities are the split).

    Returns
    -------
    ImageDataset
        Classes present in both trees, renditions ``["photo", "sketch"]``.
    """
    root = _dir(root, "sketchy")
    for inner in ("256x256", "rendered_256x256/256x256"):  # the release's folders
        if not (root / "photo").is_dir() and (root / inner / "photo").is_dir():
            root = root / inner
    photo = dict(_class_folders(_modality(root, "photo"), "sketchy photo"))
    sketch = dict(_class_folders(_modality(root, "sketch"), "sketchy sketch"))
    if set(photo) != set(sketch):
        only = sorted(set(photo) ^ set(sketch))
        raise AnchorDivError(f"sketchy: class(es) {only[:3]} lack photos or sketches")
    ids = sorted(photo)
    paths, label, rendition = [], [], []
    for k, c in enumerate(ids):
        for r, images in enumerate((photo[c], sketch[c])):
            paths += [str(p) for p in images]
            label += [k] * len(images)
            rendition += [r] * len(images)
    rendition_arr = np.array(rendition)
    return ImageDataset(
        "sketchy",
        root,
        paths,
        rendition_arr == 1,
        "the modalities: sketches are queries, photos the gallery",
        class_names=[c.replace("_", " ").replace("-", " ") for c in ids],
        class_ids=ids,
        label=np.array(label),
        renditions=["photo", "sketch"],
        rendition=rendition_arr,
    )


def _chexpert_value(cell: str, uncertain: str, where: str) -> bool:
    cell = cell.strip()
    if cell == "":
        return False  # not mentioned
    try:
        v: float | None = float(cell)
    except ValueError:
        v = None
    if v not in (0, 1, -1):
        raise AnchorDivError(f"chexpert: {where}: label {cell!r} is not 1, 0, -1 or blank")
    return uncertain == "ones" if v == -1 else v == 1


def _resolve(root: Path, rel: str) -> Path:
    for base in (root, root.parent):
        if (base / rel).is_file():
            return base / rel
    parts = Path(rel).parts
    if len(parts) > 1 and (root / Path(*parts[1:])).is_file():
        return root / Path(*parts[1:])
    raise AnchorDivError(f"chexpert: image {rel} not found under {root} or {root.parent}")


#: CheXpert views a study reads (``--views``)
VIEWS = ("frontal", "lateral", "all")


def _view(row: dict, where: str) -> str:
    """A CheXpert row's view: its ``Frontal/Lateral`` column, else its file name."""
    cell = (row.get("Frontal/Lateral") or "").strip().lower()
    if cell in ("frontal", "lateral"):
        return cell
    name = Path(row["Path"]).name.lower()
    for v in ("frontal", "lateral"):
        if v in name:
            return v
    raise AnchorDivError(
        f"chexpert: {where}: cannot tell a frontal from a lateral view (no Frontal/Lateral "
        f"column, file name {name}); read every view with views='all' (--views all)"
    )


def _chexpert_root(root: Path) -> Path:
    """ROOT, or its one subfolder holding the CSVs (``CheXpert-v1.0-small``)."""
    if any((root / f).is_file() for f in ("train.csv", "valid.csv")):
        return root
    inner = [
        d for d in _subdirs(root) if (d / "train.csv").is_file() or (d / "valid.csv").is_file()
    ]
    if len(inner) == 1:
        return inner[0]
    if inner:
        raise AnchorDivError(
            f"chexpert: {root} holds several CheXpert folders ({', '.join(d.name for d in inner)}); "
            f"pass one, e.g. chexpert:{inner[0]}"
        )
    raise AnchorDivError(f"chexpert: missing file {root / 'train.csv'} (and valid.csv)")


def chexpert(root, seed: int = 0, uncertain: str = "zeros", views: str = "frontal") -> ImageDataset:
    """CheXpert from ``train.csv`` / ``valid.csv`` (``Path`` + the 14 observation columns).

    Parameters
    ----------
    root : str or Path
        The folder holding the CSVs (``CheXpert-v1.0-small``), or its parent.
    seed : int, default 0
        Seed of the split when only one CSV is present (:func:`seeded_split` over all rows).
    uncertain : {"zeros", "ones"}, default "zeros"
        Policy for uncertain labels (−1): absent (U-Zeros) or present (U-Ones).  Blank = absent.
    views : {"frontal", "lateral", "all"}, default "frontal"
        The views read (``Frontal/Lateral`` column, else the file name): frontal only by
        default, as the paper's CheXpert evaluation.

    Returns
    -------
    ImageDataset
        ``pathologies`` (:data:`CHEXPERT_LABELS`) and ``pathology [n, 14]``; no classes.
    """
    if uncertain not in ("zeros", "ones"):
        raise AnchorDivError(f"chexpert: uncertain must be 'zeros' or 'ones', got {uncertain!r}")
    if views not in VIEWS:
        raise AnchorDivError(f"chexpert: views must be one of {', '.join(VIEWS)}, got {views!r}")
    root = _chexpert_root(_dir(root, "chexpert"))
    csvs = [root / f for f in ("train.csv", "valid.csv") if (root / f).is_file()]
    paths, labels, from_valid = [], [], []
    seen: dict[str, tuple[Path, str]] = {}  # resolved image -> (its CSV, where) listed first
    for path in csvs:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in ("Path", *CHEXPERT_LABELS) if c not in (reader.fieldnames or [])]
            if missing:
                raise AnchorDivError(f"chexpert: {path} lacks column(s) {missing}")
            rows = list(reader)
        for k, row in enumerate(rows):
            where = f"{path.name} row {k + 2}"
            image = str(_resolve(root, row["Path"]))
            if image in seen:
                first_csv, first = seen[image]
                raise AnchorDivError(
                    f"chexpert: {where} lists {row['Path']}, which {first} lists too: "
                    f"an image listed twice would be its own neighbour"
                    + (" (and a query in its own gallery)" if first_csv != path else "")
                    + ": keep one row per image"
                )
            seen[image] = (path, where)
            if views != "all" and _view(row, where) != views:
                continue
            paths.append(image)
            labels.append([_chexpert_value(row[c], uncertain, where) for c in CHEXPERT_LABELS])
            from_valid.append(path.name == "valid.csv")
    if not paths:
        raise AnchorDivError(
            f"chexpert: {', '.join(p.name for p in csvs)} list no images"
            + ("" if views == "all" else f" of {views} view (--views all reads every view)")
        )
    if len(csvs) == 2:
        query = np.array(from_valid)
        source = "the dataset's CSVs: valid.csv queries, train.csv gallery"
    else:
        query = seeded_split(np.zeros(len(paths), int), QUERY_FRACTION, seed)
        source = f"seeded: {QUERY_FRACTION:.0%} of {csvs[0].name} as queries (seed {seed})"
    return ImageDataset(
        "chexpert",
        root,
        paths,
        query,
        source + f"; {views} views; uncertain labels (-1) as "
        f"{'present (U-Ones)' if uncertain == 'ones' else 'absent (U-Zeros)'}, blanks as absent",
        pathologies=list(CHEXPERT_LABELS),
        pathology=np.array(labels, bool),
    )


#: layout name -> reader(root, seed) -> ImageDataset
LAYOUTS: dict[str, Callable[..., ImageDataset]] = {
    "imagefolder": imagefolder,
    "imagenet": imagenet,
    "imagenet-r": imagenet_r,
    "cub200": cub200,
    "sketchy": sketchy,
    "chexpert": chexpert,
}


def parse_spec(spec: str) -> tuple[str, Path]:
    """``"LAYOUT:ROOT"`` → ``(layout, root)``.

    Parameters
    ----------
    spec : str
        A layout name (:data:`LAYOUTS`), a colon, and the dataset folder.

    Returns
    -------
    (str, Path)
        The layout and its root.

    Raises
    ------
    AnchorDivError
        No colon, an unknown layout or an empty root.

    Examples
    --------
    >>> from anchordiv.data.layouts import parse_spec
    >>> parse_spec("cub200:/data/CUB_200_2011")
    ('cub200', PosixPath('/data/CUB_200_2011'))
    """
    layout, sep, root = str(spec).partition(":")
    if not sep or not root:
        raise AnchorDivError(
            f"dataset: expected LAYOUT:ROOT (e.g. imagenet-r:/data/imagenet-r), got {spec!r}"
        )
    if layout not in LAYOUTS:
        raise AnchorDivError(
            f"dataset: unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}"
        )
    return layout, Path(root)


#: options of one layout alone (``--uncertain``, ``--views``)
LAYOUT_OPTIONS = {"uncertain": "chexpert", "views": "chexpert"}


def outside_root(paths, root) -> list[tuple[str, str]]:
    """``[(path, where it really is)]`` of the files among ``paths`` that lie outside the folder
    ``root`` once symlinks, ``..`` and absolute paths are resolved (each folder is resolved
    once; a file is resolved itself only when it is a symlink).

    Examples
    --------
    >>> from anchordiv.data.layouts import outside_root
    >>> outside_root(["/data/set/a/x.jpg", "/data/set/../y.jpg"], "/data/set")
    [('/data/set/../y.jpg', '/data/y.jpg')]
    """
    base = os.path.realpath(root)
    real_dirs: dict[str, str] = {}
    out = []
    for p in map(str, paths):
        d = os.path.dirname(p) or "."
        if d not in real_dirs:
            real_dirs[d] = os.path.realpath(d)
        real = (
            os.path.realpath(p)
            if os.path.islink(p)
            else os.path.join(real_dirs[d], os.path.basename(p))
        )
        if os.path.commonpath([base, real]) != base:
            out.append((p, real))
    return out


def _confine(ds: ImageDataset, root: Path, allow_outside_root: bool) -> None:
    """Refuse a dataset whose images lie outside ``root`` (:func:`outside_root`) unless
    ``allow_outside_root``."""
    if allow_outside_root:
        return
    out = outside_root(ds.paths, root)
    if out:
        p, real = out[0]
        raise AnchorDivError(
            f"{ds.layout}: {len(out)} of {len(ds)} image file(s) lie outside the dataset folder "
            f"{root} (e.g. {p} -> {real}: a symlink, or a listed path that is absolute or uses "
            f"'..'); only files inside it are read: move them in, or pass "
            f"allow_outside_root=True (--allow-outside-root) to read them"
        )


def load_dataset(
    spec: str, seed: int = 0, *, allow_outside_root: bool = False, **options
) -> ImageDataset:
    """The dataset at ``"LAYOUT:ROOT"`` (:func:`parse_spec`), read by its layout's adapter, its
    images confined to ROOT.

    Parameters
    ----------
    spec : str
        ``"imagefolder:ROOT"``, ``"imagenet:ROOT"``, ``"imagenet-r:ROOT"``, ``"cub200:ROOT"``,
        ``"sketchy:ROOT"`` or ``"chexpert:ROOT"``.
    seed : int, default 0
        Seed of a seeded query/gallery split.
    allow_outside_root : bool, default False
        Read image files that lie outside ROOT once resolved (symlinks out of it; CUB or
        CheXpert CSV paths that are absolute or climb out with ``..``).  By default such files
        are an error (:func:`outside_root`), so a dataset from elsewhere cannot make a run
        read and embed other files of the machine.
    **options
        A layout's own options (:data:`LAYOUT_OPTIONS`: chexpert's ``uncertain``, ``views``);
        None = its default.

    Returns
    -------
    ImageDataset
        Items, labels and split.

    Raises
    ------
    AnchorDivError
        A bad spec, a seed that is not an integer >= 0, an option of another layout, what the
        layout's adapter refuses (missing or malformed label files, an image listed twice,
        ...), or image files outside ROOT without ``allow_outside_root``.
    """
    from ..errors import integer

    layout, root = parse_spec(spec)
    seed = integer("seed", seed, low=0)
    given = {k: v for k, v in options.items() if v is not None}
    for k in given:
        if LAYOUT_OPTIONS.get(k) != layout:
            raise AnchorDivError(
                f"--{k} applies to the {LAYOUT_OPTIONS.get(k, '?')} layout, not {layout}"
            )
    ds = LAYOUTS[layout](root, seed=seed, **given)
    _confine(ds, root.expanduser(), allow_outside_root)
    return ds

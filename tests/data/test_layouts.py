"""Dataset layouts on miniature trees: items, labels, renditions, pathologies, splits, and the
errors for bad specs, missing files and empty classes."""

import numpy as np
import pytest

import image_trees as trees
from anchordiv.data import layouts
from anchordiv.errors import AnchorDivError


def _split_ok(ds):
    assert ds.query.dtype == bool and ds.query.shape == (len(ds.paths),)
    assert ds.query.any() and (~ds.query).any()


def test_imagefolder_classes_and_seeded_split(tmp_path):
    root = trees.imagefolder(tmp_path / "if")
    ds = layouts.load_dataset(f"imagefolder:{root}")
    assert ds.class_names == ["red fox", "school bus", "tabby cat"]
    assert len(ds) == 18 and np.bincount(ds.label).tolist() == [6, 6, 6]
    assert all(p.startswith(str(root)) for p in ds.paths)
    _split_ok(ds)
    assert [int(ds.query[ds.label == c].sum()) for c in range(3)] == [1, 1, 1]
    again = layouts.load_dataset(f"imagefolder:{root}")
    np.testing.assert_array_equal(ds.query, again.query)
    assert "seeded" in ds.split_source
    assert ds.summary()["queries"] == 3


def test_imagenet_names_from_wordnet_ids(tmp_path):
    ds = layouts.imagenet(trees.imagenet(tmp_path / "val"))
    assert ds.class_ids == list(trees.IMAGENET_R_WNIDS)
    assert ds.class_names[0] == "goldfish" and len(set(ds.class_names)) == 4
    _split_ok(ds)


def test_imagenet_r_renditions_from_file_names(tmp_path):
    ds = layouts.imagenet_r(trees.imagenet_r(tmp_path / "imr"))
    assert ds.renditions == ["art", "cartoon", "sketch", "video game"]
    assert len(ds) == 32 and np.bincount(ds.rendition).tolist() == [8, 8, 8, 8]
    first = ds.paths[int(np.flatnonzero(ds.rendition == 3)[0])]
    assert first.endswith(".jpg") and "videogame_" in first
    _split_ok(ds)


def test_cub200_official_split(tmp_path):
    ds = layouts.load_dataset(f"cub200:{trees.cub200(tmp_path)}")
    assert ds.class_names == ["Black footed Albatross", "Laysan Albatross", "Sooty Albatross"]
    assert np.bincount(ds.label).tolist() == [6, 6, 6]
    assert ds.query.sum() == 6  # every third image is a test image
    assert all(q == p.endswith(("_0000.jpg", "_0003.jpg")) for q, p in zip(ds.query, ds.paths))
    assert "train_test_split" in ds.split_source


def test_sketchy_sketches_query_photos(tmp_path):
    ds = layouts.sketchy(trees.sketchy(tmp_path / "sk"))
    assert ds.renditions == ["photo", "sketch"] and ds.class_names[1] == "alarm clock"
    np.testing.assert_array_equal(ds.query, ds.rendition == 1)
    assert all(("/sketch/" in p) == q for p, q in zip(ds.paths, ds.query))


def test_chexpert_labels_policy_and_split(tmp_path):
    root = trees.chexpert(tmp_path)
    ds = layouts.chexpert(root)
    assert ds.pathologies == list(layouts.CHEXPERT_LABELS) and ds.pathology.shape == (24, 14)
    assert ds.label is None and ds.query.sum() == 8  # valid.csv rows are the queries
    effusion = ds.pathology[:, ds.pathologies.index("Pleural Effusion")]
    assert effusion.tolist() == [k % 2 == 0 for k in range(16)] + [k % 2 == 0 for k in range(8)]
    edema = ds.pathologies.index("Edema")
    assert ds.pathology[0, edema] == 0  # uncertain (-1) -> absent under U-Zeros
    assert layouts.chexpert(root, uncertain="ones").pathology[0, edema] == 1
    assert "uncertain labels (-1) as absent" in ds.split_source
    with pytest.raises(AnchorDivError, match="uncertain"):
        layouts.chexpert(root, uncertain="maybe")


def test_subset_cuts_every_field(tmp_path):
    ds = layouts.imagenet_r(trees.imagenet_r(tmp_path / "imr"))
    sub = ds.subset([0, 5, 9])
    assert len(sub) == 3 and sub.rendition.tolist() == ds.rendition[[0, 5, 9]].tolist()
    assert sub.paths == [ds.paths[i] for i in (0, 5, 9)]


def test_spec_and_layout_errors(tmp_path):
    with pytest.raises(AnchorDivError, match="LAYOUT:ROOT"):
        layouts.parse_spec("/data/imagenet")
    with pytest.raises(AnchorDivError, match="unknown layout 'coco'"):
        layouts.load_dataset(f"coco:{tmp_path}")
    with pytest.raises(AnchorDivError, match="not found"):
        layouts.load_dataset(f"imagefolder:{tmp_path / 'nope'}")
    (tmp_path / "empty" / "cat").mkdir(parents=True)
    with pytest.raises(AnchorDivError, match="cat holds no images"):
        layouts.imagefolder(tmp_path / "empty")
    with pytest.raises(AnchorDivError, match="no class folders"):
        layouts.imagefolder(tmp_path / "empty" / "cat")
    root = trees.imagefolder(tmp_path / "if", classes=("dog", "cat"), per_class=2)
    with pytest.raises(AnchorDivError, match="not a WordNet id"):
        layouts.imagenet(root)
    with pytest.raises(AnchorDivError, match="img0.png does not start with its rendition"):
        layouts.imagenet_r(root)
    with pytest.raises(AnchorDivError, match="missing file .*images.txt"):
        layouts.cub200(root)
    with pytest.raises(AnchorDivError, match="photo"):
        layouts.sketchy(root)
    with pytest.raises(AnchorDivError, match="train.csv"):
        layouts.chexpert(root)


def test_cub_and_chexpert_file_errors(tmp_path):
    base = trees.cub200(tmp_path / "c") / "CUB_200_2011"
    (base / "images" / "001.Black_footed_Albatross" / "Black_footed_Albatross_0001.jpg").unlink()
    with pytest.raises(AnchorDivError, match="1 listed image"):
        layouts.cub200(base)
    root = trees.chexpert(tmp_path / "x")
    text = (root / "valid.csv").read_text().replace("1.0,", "2.0,", 1)
    (root / "valid.csv").write_text(text)
    with pytest.raises(AnchorDivError, match="valid.csv row 2"):
        layouts.chexpert(root)
    (root / "valid.csv").write_text("Path,Sex\nx.jpg,F\n")
    with pytest.raises(AnchorDivError, match="lacks column"):
        layouts.chexpert(root)


def test_seeded_split_keeps_singletons_in_gallery():
    q = layouts.seeded_split([0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], fraction=0.2, seed=3)
    assert not q[0] and q[1:].sum() == 2


def test_wnid_folders_under_imagefolder_warn_and_read_wordnet_names(tmp_path):
    root = trees.imagenet(tmp_path / "val")
    with pytest.warns(UserWarning, match="class folders are WordNet ids.*imagenet:"):
        ds = layouts.load_dataset(f"imagefolder:{root}")
    assert ds.class_names == layouts.load_dataset(f"imagenet:{root}").class_names
    assert not any(n.startswith("n0") for n in ds.class_names)


def test_root_one_level_off_finds_the_dataset_or_says_where(tmp_path):
    trees.imagenet(tmp_path / "ILSVRC" / "val")
    with pytest.warns(UserWarning, match=r"reading .*val"):
        ds = layouts.load_dataset(f"imagenet:{tmp_path / 'ILSVRC'}")
    assert len(ds) == 24
    trees.imagenet(tmp_path / "ILSVRC" / "train", per_class=2)
    with pytest.raises(AnchorDivError, match="several datasets.*train, val"):
        layouts.load_dataset(f"imagenet:{tmp_path / 'ILSVRC'}")
    one_class = tmp_path / "ILSVRC" / "val" / trees.IMAGENET_R_WNIDS[0]
    with pytest.raises(AnchorDivError, match="looks like one class.*probably its parent"):
        layouts.load_dataset(f"imagefolder:{one_class}")


def test_imagenet_flat_validation_folder(tmp_path):
    import shutil

    tree = trees.imagenet(tmp_path / "sorted", per_class=2)
    flat = tmp_path / "val"
    flat.mkdir()
    rows = ["ImageId,PredictionString"]
    for k, p in enumerate(sorted(tree.rglob("*.JPEG"))):
        name = f"ILSVRC2012_val_{k:08d}"
        shutil.copy(p, flat / f"{name}.JPEG")
        rows.append(f"{name},{p.parent.name} 1 2 3 4")
    with pytest.raises(AnchorDivError, match="no wnid folders.*valprep.sh"):
        layouts.load_dataset(f"imagenet:{flat}")
    (tmp_path / "LOC_val_solution.csv").write_text("\n".join(rows) + "\n")
    ds = layouts.load_dataset(f"imagenet:{flat}")
    assert ds.class_ids == sorted(trees.IMAGENET_R_WNIDS)
    assert np.bincount(ds.label).tolist() == [2, 2, 2, 2]


@pytest.mark.slow  # loads WordNet
def test_unknown_wnid_is_named(tmp_path):
    trees.imagenet(tmp_path / "val", wnids=("n01443537", "n00000042"), per_class=2)
    with pytest.raises(AnchorDivError, match="'n00000042': WordNet 3.0 has no noun synset"):
        layouts.load_dataset(f"imagenet:{tmp_path / 'val'}")


def test_sketchy_as_released(tmp_path):
    trees.sketchy(tmp_path / "rendered_256x256" / "256x256")
    for root in (tmp_path / "rendered_256x256", tmp_path):
        assert len(layouts.load_dataset(f"sketchy:{root}")) == 24


def test_chexpert_views_parent_and_uncertain(tmp_path):
    import csv

    base = trees.chexpert(tmp_path)
    valid = base / "valid.csv"
    rows = list(csv.DictReader(open(valid)))
    lateral = dict(rows[0], Path=rows[0]["Path"].replace("view1_frontal", "view2_lateral"))
    trees.Images(9).save(tmp_path / lateral["Path"])
    with open(valid, "w", newline="") as f:
        w = csv.DictWriter(f, list(rows[0]))
        w.writeheader()
        w.writerows([*rows, lateral])
    ds = layouts.load_dataset(f"chexpert:{tmp_path}")  # the parent of CheXpert-v1.0-small
    assert len(ds) == 24 and not any("lateral" in p for p in ds.paths)
    assert "frontal views" in ds.split_source and "U-Zeros" in ds.split_source
    sizes = [len(layouts.load_dataset(f"chexpert:{base}", views=v)) for v in ("all", "lateral")]
    assert sizes == [25, 1]
    ones = layouts.load_dataset(f"chexpert:{base}", uncertain="ones")
    edema = ds.pathologies.index("Edema")
    assert ones.pathology[:, edema].all() and not ds.pathology[:, edema].all()
    with pytest.raises(AnchorDivError, match="--views applies to the chexpert layout"):
        layouts.load_dataset(f"imagefolder:{tmp_path}", views="all")


def _write_report(folder):
    """What ``anchordiv study ... -o folder`` leaves: report.md, PNGs, embeddings."""
    trees.Images(9).save(folder / "budget.png")
    (folder / "report.md").write_text("# anchordiv study budget on images\n")
    return folder


@pytest.mark.filterwarnings("ignore:imagefolder. the class folders are WordNet ids")
def test_a_report_inside_the_root_is_not_a_class(tmp_path):
    """A report written at ROOT/results is left out (with a warning naming it), so it neither
    becomes a class nor strips the wnid folders of their WordNet names."""
    root = trees.imagenet(tmp_path / "val")
    expected = layouts.load_dataset(f"imagenet:{root}")
    _write_report(root / "results")
    for layout in ("imagenet", "imagefolder"):
        with pytest.warns(
            UserWarning, match=r"results is not read as a class: it holds report\.md"
        ):
            ds = layouts.load_dataset(f"{layout}:{root}")
        assert ds.class_ids == expected.class_ids and ds.class_names == expected.class_names
        assert not any("results" in p for p in ds.paths)


def test_one_odd_folder_among_wnids_is_named(tmp_path):
    """A non-wnid folder among wnid folders (not an anchordiv output) does not silently turn
    every class name into its raw wnid: a warning names it and what it costs."""
    root = trees.imagenet(tmp_path / "val")
    trees.imagefolder(root, classes=("holiday_photos",), per_class=2)
    with pytest.warns(
        UserWarning,
        match=r"4 of the 5 class folders are WordNet ids but "
        r"'holiday_photos' is not.*raw prompts",
    ):
        ds = layouts.load_dataset(f"imagefolder:{root}")
    assert "holiday photos" in ds.class_names


def test_kaggle_layout_finds_its_csv_or_says_where_it_goes(tmp_path):
    """Kaggle's release keeps LOC_val_solution.csv four folders above ILSVRC/Data/CLS-LOC/val:
    found there; missing, the error says where to put it before offering the sort recipe."""
    import shutil

    tree = trees.imagenet(tmp_path / "sorted", per_class=2)
    kaggle = tmp_path / "imagenet-object-localization-challenge"
    flat = kaggle / "ILSVRC" / "Data" / "CLS-LOC" / "val"
    flat.mkdir(parents=True)
    rows = ["ImageId,PredictionString"]
    for k, p in enumerate(sorted(tree.rglob("*.JPEG"))):
        shutil.copy(p, flat / f"ILSVRC2012_val_{k:08d}.JPEG")
        rows.append(f"ILSVRC2012_val_{k:08d},{p.parent.name} 1 2 3 4")
    with pytest.raises(
        AnchorDivError,
        match=r"put Kaggle's LOC_val_solution\.csv in .*val \(or "
        r"in one of the 4 folders above it.*or sort",
    ):
        layouts.load_dataset(f"imagenet:{flat}")
    (kaggle / "LOC_val_solution.csv").write_text("\n".join(rows) + "\n")
    ds = layouts.load_dataset(f"imagenet:{flat}")
    assert np.bincount(ds.label).tolist() == [2, 2, 2, 2]


def test_files_outside_the_root_are_refused_unless_allowed(tmp_path):
    """A symlink out of the root, and CUB / CheXpert CSV paths that are absolute or climb out
    with '..', are an error naming the file and the opt-in; allowed, they are read."""
    import csv

    secret = trees.Images(8).save(tmp_path / "elsewhere" / "secret_frontal.png")
    root = trees.imagefolder(tmp_path / "if")
    (root / "red_fox" / "link.png").symlink_to(secret)
    match = r"1 of 19 image file\(s\) lie outside the dataset folder.*link\.png -> .*secret_frontal\.png"
    with pytest.raises(AnchorDivError, match=match + r".*allow_outside_root=True"):
        layouts.load_dataset(f"imagefolder:{root}")
    ds = layouts.load_dataset(f"imagefolder:{root}", allow_outside_root=True)
    assert len(ds) == 19
    (root / "red_fox" / "link.png").unlink()
    (root / "red_fox_too").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(AnchorDivError, match="lie outside the dataset folder"):
        layouts.load_dataset(f"imagefolder:{root}")

    cub = trees.cub200(tmp_path / "cub") / "CUB_200_2011"
    lines = (cub / "images.txt").read_text().splitlines()
    lines[0] = "1 ../../../elsewhere/secret_frontal.png"
    (cub / "images.txt").write_text("\n".join(lines) + "\n")
    with pytest.raises(AnchorDivError, match=r"cub200: 1 of 18 .*outside"):
        layouts.load_dataset(f"cub200:{tmp_path / 'cub'}")

    base = trees.chexpert(tmp_path / "cx")
    with open(base / "valid.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    rows[0]["Path"] = str(secret)
    with open(base / "valid.csv", "w", newline="") as f:
        w = csv.DictWriter(f, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with pytest.raises(AnchorDivError, match=r"chexpert: 1 of 24 .*secret_frontal\.png"):
        layouts.load_dataset(f"chexpert:{tmp_path / 'cx'}")
    assert len(layouts.load_dataset(f"chexpert:{base}", allow_outside_root=True)) == 24


def test_outside_root_resolves_folders_and_links(tmp_path):
    inside = trees.Images(7).save(tmp_path / "root" / "a" / "x.png")
    assert (
        layouts.outside_root(
            [inside, tmp_path / "root" / "a" / ".." / "a" / "x.png"], tmp_path / "root"
        )
        == []
    )
    assert len(layouts.outside_root([tmp_path / "root" / ".." / "y.png"], tmp_path / "root")) == 1

"""The folding database and sequences simulated with the package (``isocloth/data/perception``, 12 × 12
nodes) against thesis §7.4.1–7.4.4: class structure, Table 7.1's ordering, the nearest-representative
classifier on held-out samples."""

import numpy as np
import pytest

from isocloth.contact.intersection import face_intersections
from isocloth.mesh.generators import rectangle
from isocloth.perception.comparison import SEQUENCE_COLUMNS, stored_database, stored_sequences
from isocloth.perception.database import REPRESENTATIONS, class_medoids, representation_table
from isocloth.perception.dgli import sequence_coordinates
from isocloth.perception.metrics import classify, spearman_distance_matrix


@pytest.fixture(scope="module")
def db():
    return stored_database("database")


@pytest.fixture(scope="module")
def heldout():
    return stored_database("heldout")


@pytest.fixture(scope="module")
def sequences():
    return stored_sequences()


def test_the_database_has_twelve_classes_of_intersection_free_samples(db, heldout):
    labels, counts = np.unique(db.labels, return_counts=True)
    assert labels.tolist() == [f"{k:02d}" for k in range(1, 13)]
    # every draw of one sample of class 11 (half fold turned over) failed: it is left out
    assert counts.tolist() == [10] * 10 + [9, 10]
    assert np.unique(heldout.labels, return_counts=True)[1].tolist() == [3] * 10 + [2, 3]
    mesh = rectangle(1.0, 1.0, 12, 12, element="triangle")
    for x in np.concatenate([db.x, heldout.x]):
        assert len(face_intersections(x, mesh.triangles)) == 0
    assert (db.intersections == 0).all() and (heldout.intersections == 0).all()


def _representatives(db):
    """Thesis §7.4.4: per class, the sample closest to the class centre; here one per sub-class
    (the medoid in Spearman's distance of the dGLI coordinates)."""
    X = sequence_coordinates(db.x, db.segments)
    _, medoids = class_medoids(spearman_distance_matrix(X), np.char.add(db.labels, db.subclasses))
    return {label: X[medoids[db.labels[medoids] == label]] for label in np.unique(db.labels)}


def test_the_nearest_representative_classifier_labels_held_out_samples(db, heldout):
    """Twelve classes (chance: 8 %). The thesis' real images were labelled with one error; on these
    coarse simulated folds the classifier reaches about 70 % (docs/perception.md), a floor here."""
    reps = _representatives(db)
    X = sequence_coordinates(heldout.x, heldout.segments)
    predicted = np.array([classify(x, reps)[0] for x in X])
    accuracy = float(np.mean(predicted == heldout.labels))
    assert accuracy >= 0.65, list(zip(heldout.labels[predicted != heldout.labels], predicted[predicted != heldout.labels]))
    # flat states are never taken for folded ones
    assert not np.any((heldout.labels == "01") & (predicted != "01"))


def test_the_dgli_separates_the_classes_better_than_edge_and_corner_distances(db):
    """Table 7.1: of the representations built on the same corners and segments, the dGLI
    coordinates give the smallest Davies–Bouldin index (the curve distances are compared in
    docs/perception.md)."""
    table = representation_table({"Database": (db.x, db.labels)}, db.segments, db.corners, db.boundary)
    scores = {rep: table[rep]["Database"] for rep in REPRESENTATIONS}
    assert scores["dGLI"] < scores["Edges"] < scores["Corners"], scores


@pytest.mark.parametrize("name", list(SEQUENCE_COLUMNS))
def test_the_sequences_show_their_folds_as_blocks(db, sequences, name):
    seq = sequences[name]
    D = spearman_distance_matrix(sequence_coordinates(seq["x"], db.segments))
    stages = seq["stages"]
    same = stages[:, None] == stages[None, :]
    off = ~np.eye(len(stages), dtype=bool)
    assert D[same & off].mean() < D[~same].mean()
    # each fold changes the coordinates: consecutive blocks differ more than the frames within them
    for s in np.unique(stages)[:-1]:
        a, b = stages == s, stages == s + 1
        assert D[np.ix_(a, b)].mean() > max(D[np.ix_(a, a)].mean(), D[np.ix_(b, b)].mean())


@pytest.mark.parametrize("name", ["fold-two-corners", "fold-four-corners"])
def test_the_dgli_has_the_lowest_index_on_the_corner_sequences(db, sequences, name):
    """Sequences I and II of Table 7.1 (on the half fold, sequence III, edge distances separate the
    two stages better: docs/perception.md)."""
    seq = sequences[name]
    column = SEQUENCE_COLUMNS[name]
    table = representation_table({column: (seq["x"], seq["stages"])}, db.segments, db.corners, db.boundary)
    scores = {rep: table[rep][column] for rep in REPRESENTATIONS}
    assert min(scores, key=scores.get) == "dGLI", scores


@pytest.mark.slow
def test_a_stored_sample_is_what_the_generator_simulates(db):
    from isocloth.perception.database import _simulate

    i = int(np.flatnonzero(db.labels == "02")[0])
    out = _simulate("02", 0, 0, 12)
    assert np.abs(out["x"] - db.x[i]).max() < 2e-3

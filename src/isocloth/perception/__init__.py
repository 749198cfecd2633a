"""Perception of cloth states (Coltraro et al., thesis Chapter 7): the Gauss linking integral of
boundary segments, its derivative (dGLI) and the dGLI cloth coordinates, distances, the
Davies–Bouldin index, the baseline representations and a nearest-representative classifier."""

from isocloth.perception.dgli import (
    DEFAULT_CLIP,
    cloth_coordinates,
    coordinate_matrix,
    corner_adjacent_segments,
    dgli,
    directional_derivative,
    inverse_cube_integral,
    polyline_gli,
    segment_gli,
    sequence_coordinates,
    sheet_segments,
    tetrahedron_volume,
)
from isocloth.perception.metrics import (classify, davies_bouldin, distance_matrix, spearman_distance,
                                        spearman_distance_matrix)

__all__ = ["DEFAULT_CLIP", "classify", "cloth_coordinates", "coordinate_matrix", "corner_adjacent_segments",
           "davies_bouldin", "dgli", "directional_derivative", "distance_matrix", "inverse_cube_integral", "polyline_gli",
           "segment_gli", "sequence_coordinates", "sheet_segments", "spearman_distance", "spearman_distance_matrix",
           "tetrahedron_volume"]

"""The `[[clusters]]` tables, as the rest of `nvq.clusters` sees them: the struct and
its reader live with the other config sections (`nvq.config.clusters`)."""

from __future__ import annotations

from nvq.config.clusters import parse_clusters
from nvq.config.types import ClusterConfig

__all__ = ["ClusterConfig", "parse_clusters"]

"""Work spread over a Ray cluster: one actor per worker, results in the order of the inputs.

Ray (https://docs.ray.io) is optional and imported only here. The parameter fits
(:mod:`isocloth.validation.evaluators`) and the environment rollouts (:mod:`isocloth.envs.rollouts`)
use :class:`ActorMap`.
"""

from __future__ import annotations

__all__ = ["ActorMap", "import_ray"]

INSTALL_HINT = "pip install ray"


def import_ray(purpose: str):
    """The ``ray`` module.

    Raises
    ------
    ImportError
        If Ray is not installed, naming ``purpose`` (what needed it) and the command that installs it.
    """
    try:
        import ray
    except ImportError:
        raise ImportError(f"{purpose} needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


class ActorMap:
    """``workers`` Ray actors of class ``cls`` built with ``args``; :meth:`map` calls one of their
    methods on a list of inputs (an actor per input as they become free; results in input order).

    Parameters
    ----------
    cls : class whose instances hold the expensive state (a replay, an environment)
    args : tuple, constructor arguments (pickled to every actor)
    address : Ray address (``"auto"``, ``"ray://host:10001"``, or ``"local"`` to start a local instance);
        ignored when Ray is already initialised in this process
    workers : number of actors (default: the cluster's CPUs, one CPU each)
    limit : at most this many actors (e.g. the number of inputs)
    purpose : what the actors are for, named in the error when Ray is missing

    Raises
    ------
    ImportError
        If Ray is not installed (with the command that installs it).
    """

    def __init__(self, cls, args: tuple, *, address: str, workers: int | None = None, limit: int | None = None,
                 purpose: str = "this"):
        ray = import_ray(purpose)
        from ray.util import ActorPool

        self._ray = ray
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
        n = int(workers) if workers else max(1, int(ray.cluster_resources().get("CPU", 1)))
        if limit is not None:
            n = min(n, max(1, int(limit)))
        if n < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        actor = ray.remote(num_cpus=1)(cls)
        self.workers = n
        self.actors = [actor.remote(*args) for _ in range(n)]
        self.pool = ActorPool(self.actors)

    def map(self, method: str, items: list) -> list:
        """``[actor.<method>(item) for item in items]``, evaluated on the actors."""
        return list(self.pool.map(lambda a, item: getattr(a, method).remote(item), list(items)))

    def close(self) -> None:
        """Stop the actors (the cluster keeps running)."""
        for a in self.actors:
            self._ray.kill(a)
        self.actors = []

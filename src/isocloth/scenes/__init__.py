"""Scene files: schema, loader and the built-in scenes.

``from isocloth.scenes import load_scene`` gives a built Scene (model, stepper, initial state) of a
built-in scene name or a TOML file; see :mod:`isocloth.scenes.loader`.
"""

__all__ = ["Scene", "SceneError", "build_scene", "builtin_scene_names", "load_scene", "load_scene_config"]


def __getattr__(name):
    # the loader imports the model and the solvers: loaded on first use, not with the package
    if name in __all__:
        from isocloth.scenes import loader

        return getattr(loader, name)
    raise AttributeError(f"module 'isocloth.scenes' has no attribute {name!r}")

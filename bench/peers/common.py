"""Helpers shared by the peer scripts (stdlib only): the scene file,
timing and the JSON-lines output."""

import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load_scenes(path=None):
    with open(path or os.path.join(HERE, "scenes.json")) as fh:
        return json.load(fh)


def repo_path(rel):
    return os.path.join(ROOT, rel)


def emit(**kw):
    print(json.dumps(kw), flush=True)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def time_batched(fn, reps, batch=1, warmup=10):
    """Median seconds per call of `fn(batch)`, which must run `batch` calls:
    `reps` timed batches after `warmup` untimed calls."""
    fn(warmup)
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(batch)
        t.append((time.perf_counter() - t0) / batch)
    return statistics.median(t)


def time_runs(fn, budget, max_reps=5):
    """Median wall time of whole runs `fn()`: at least one run, more while
    the total stays within `budget` seconds (at most `max_reps`)."""
    t, start = [], time.perf_counter()
    while not t or (len(t) < max_reps and time.perf_counter() - start < budget):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return statistics.median(t), len(t)


def read_scene_toml(rel):
    """A dualsim scene file reduced to what the peers rebuild: free bodies
    (spheres and boxes) over static planes. Anything else is an error, so
    a scene the peers cannot reproduce is never silently simplified."""
    try:
        import tomllib
    except ImportError:  # Python < 3.11 (a Nimble venv on an older interpreter)
        import tomli as tomllib
    with open(repo_path(rel), "rb") as fh:
        doc = tomllib.load(fh)
    known_top = {"sim", "solver_params", "static", "body"}
    extra = set(doc) - known_top
    if extra:
        raise ValueError(f"{rel}: the peer rebuild does not handle {sorted(extra)}")
    sim = doc["sim"]
    out = {
        "dt": float(sim["dt"]),
        "steps": int(sim["steps"]),
        "gravity": [float(g) for g in sim.get("gravity", [0.0, 0.0, -9.81])],
        "statics": [],
        "bodies": [],
    }
    for s in doc.get("static", []):
        shape = s["shape"]
        if shape["type"] != "plane":
            raise ValueError(f"{rel}: static shape {shape['type']} not handled")
        out["statics"].append(
            {
                "normal": [float(x) for x in shape.get("normal", [0.0, 0.0, 1.0])],
                "offset": float(shape.get("offset", 0.0)),
                "friction": float(s.get("friction", 0.5)),
            }
        )
    known_body = {"name", "mass", "inertia", "position", "friction", "shape", "orientation", "velocity",
                  "angular_velocity", "restitution"}
    for b in doc.get("body", []):
        extra = set(b) - known_body
        if extra:
            raise ValueError(f"{rel}: body {b.get('name')}: keys {sorted(extra)} not handled")
        if float(b.get("restitution", 0.0)) != 0.0:
            raise ValueError(f"{rel}: restitution not handled")
        shape = b["shape"]
        if shape["type"] not in ("sphere", "box"):
            raise ValueError(f"{rel}: body shape {shape['type']} not handled")
        inertia = b["inertia"]
        if len(inertia) != 3:
            raise ValueError(f"{rel}: only diagonal inertia [Ixx, Iyy, Izz] is handled")
        out["bodies"].append(
            {
                "name": b["name"],
                "mass": float(b["mass"]),
                "inertia": [float(x) for x in inertia],
                "position": [float(x) for x in b.get("position", [0.0, 0.0, 0.0])],
                "orientation": [float(x) for x in b.get("orientation", [1.0, 0.0, 0.0, 0.0])],
                "velocity": [float(x) for x in b.get("velocity", [0.0, 0.0, 0.0])],
                "angular_velocity": [float(x) for x in b.get("angular_velocity", [0.0, 0.0, 0.0])],
                "friction": float(b.get("friction", 0.5)),
                "shape": shape,
            }
        )
    return out


def pile120_scene(s):
    """scenes.json's `pile120` in the form of `read_scene_toml`."""
    r, m, mu = s["radius"], s["mass"], s["friction"]
    return {
        "dt": s["dt"],
        "steps": s["steps"],
        "gravity": [0.0, 0.0, -9.81],
        "statics": [{"normal": [0.0, 0.0, 1.0], "offset": 0.0, "friction": mu}],
        "bodies": [
            {
                "name": f"s{i}",
                "mass": m,
                "inertia": [0.4 * m * r * r] * 3,
                "position": p,
                "orientation": [1.0, 0.0, 0.0, 0.0],
                "velocity": [0.0, 0.0, 0.0],
                "angular_velocity": [0.0, 0.0, 0.0],
                "friction": mu,
                "shape": {"type": "sphere", "radius": r},
            }
            for i, p in enumerate(s["positions"])
        ],
    }

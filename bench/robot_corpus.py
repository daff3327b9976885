#!/usr/bin/env python3
"""Load every URDF under a folder as a scene would, and report which load
and which are refused (with the reason). Not run by CI: the corpus is not in
the repository.

Each URDF becomes a scene with the ground plane, the robot on a fixed base,
`ignore_joint_limits = true`, `ignore_mimic = true` (no backend enforces
limits or couples mimic joints; `--mimic` refuses them instead) and the
given `package_dirs`, checked by
`dualsim run SCENE --steps 0 --json` (the scene is loaded and validated,
nothing is simulated). With `--steps N` it also simulates N steps (ipm,
dt = 1 ms) and reports failed steps and the wall time.

    cargo build --release
    python3 bench/robot_corpus.py ROBOTS_DIR --package-dir DIR [--package-dir DIR ...]

For example-robot-data (URIs `package://example-robot-data/robots/...` and a
few `package://b1_description/...`): ROBOTS_DIR = .../share/example-robot-data/robots,
package dirs .../share and ROBOTS_DIR. docs/robots.md has the table.
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("DUALSIM_BIN", os.path.join(HERE, "..", "target", "release", "dualsim"))


def urdfs(root):
    out = []
    for d, _, files in os.walk(root):
        out += [os.path.join(d, f) for f in files if f.endswith(".urdf")]
    return sorted(out)


def kind(message):
    """A short class of a refusal message."""
    m = re.search(r"(\d+) collision mesh(es)? cannot be used: (.*)", message)
    if m:
        first = m.group(3).split(": ", 1)[-1]
        if "does not exist" in first:
            return "mesh: file does not exist"
        if "not supported" in first:
            return "mesh: " + re.sub(r"`[^`]*`", "…", first.split(";")[0])[:70]
        return "mesh: " + re.sub(r"`[^`]*`", "…", first.split(";")[0])[:70]
    return re.sub(r"`[^`]*`", "…", message)[:90]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--package-dir", action="append", default=[])
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--mimic", action="store_true", help="refuse mimic joints (no ignore_mimic)")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    pkgs = [os.path.abspath(p) for p in a.package_dir]
    files = urdfs(root)
    loaded, refused = 0, 0
    reasons = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            rel = os.path.relpath(f, root)
            scene = os.path.join(tmp, "scene.toml")
            with open(scene, "w") as s:
                s.write(
                    "[sim]\ndt = 0.001\nsteps = 1\n\n[[static]]\nname = \"ground\"\n"
                    "shape = { type = \"plane\", normal = [0.0, 0.0, 1.0], offset = 0.0 }\n\n"
                    f"[[robot]]\nname = \"r\"\nurdf = {json.dumps(f)}\nbase = \"fixed\"\n"
                    f"base_position = [0.0, 0.0, 1.0]\nignore_joint_limits = true\n"
                    + ("" if a.mimic else "ignore_mimic = true\n")
                    + f"package_dirs = {json.dumps(pkgs)}\n"
                )
            t0 = time.time()
            p = subprocess.run(
                [BIN, "run", scene, "--steps", str(a.steps), "--json"],
                capture_output=True,
                text=True,
            )
            dt = time.time() - t0
            if p.returncode == 2:
                refused += 1
                msg = p.stderr.strip().split(": ", 2)[-1].replace(f + ": ", "")
                reasons[kind(msg)] += 1
                print(f"refused  {rel}: {msg[:400]}")
            else:
                loaded += 1
                extra = ""
                try:
                    d = json.loads(p.stdout)
                    if a.steps:
                        extra = f", {d['steps']} steps, failed {d['stats']['failed_steps']}"
                        if d.get("error"):
                            extra += f", error: {d['error']['message'][:120]}"
                except json.JSONDecodeError:
                    extra = f", exit {p.returncode}: {p.stderr.strip()[:200]}"
                print(f"loaded   {rel} ({dt:.2f} s{extra})")
            sys.stdout.flush()
    print(f"\n{len(files)} URDF files: {loaded} loaded, {refused} refused")
    for k, n in reasons.most_common():
        print(f"  {n:3d} x {k}")


if __name__ == "__main__":
    main()

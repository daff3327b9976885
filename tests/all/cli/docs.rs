//! `docs/scene-format.md` against the code it documents.
//!
//! * Every key the scene parser accepts (`scene::accepted_keys`, the very
//!   lists the parser reads) is documented in its table's section, as the
//!   first column of a key table (a markdown table whose header's first
//!   cell is `key`, rows `` | `name` | … ``); every key documented
//!   there is accepted; every enumerated value the parser accepts
//!   (`scene::accepted_values`) is named in that section.
//! * Every ```toml block of the document parses as TOML; every block whose
//!   first line is `# scene` is a complete scene file and goes through the
//!   real loader (as a file in `examples/scenes/`, so that a URDF path
//!   resolves there); together these complete scenes use every accepted
//!   key, so no documented key is one the loader rejects. The README's
//!   scene loads too.
//! * Every key of every command's JSON output (`run --json`, the `--out`
//!   trajectory, `check --json`, `grad --json`, `bench --json`, `hessian
//!   --check --json`, `optimize --json`, and a failed run's `error`) is named in the document's section on command output.
//! * The README's API section is the compiled `examples/api_tour.rs`; the
//!   README and `docs/` never mention the engineers' design folder, and
//!   every relative link resolves inside the repository.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The document, read at run time (editing it needs no rebuild).
fn doc() -> String {
    let p = root().join("docs/scene-format.md");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A markdown section: its heading line and its text up to the next
/// heading of the same or a higher level (subsections included).
struct Section {
    heading: String,
    body: String,
}

fn heading_level(line: &str) -> Option<usize> {
    let n = line.chars().take_while(|c| *c == '#').count();
    (n > 0 && line[n..].starts_with(' ')).then_some(n)
}

/// The sections of `md`, ignoring `#` lines inside code blocks.
fn sections(md: &str) -> Vec<Section> {
    let mut heads: Vec<(usize, usize)> = Vec::new(); // (line index, level)
    let lines: Vec<&str> = md.lines().collect();
    let mut in_code = false;
    for (i, l) in lines.iter().enumerate() {
        if l.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if !in_code {
            if let Some(level) = heading_level(l) {
                heads.push((i, level));
            }
        }
    }
    heads
        .iter()
        .enumerate()
        .map(|(k, &(i, level))| {
            let end = heads[k + 1..]
                .iter()
                .find(|(_, l)| *l <= level)
                .map(|(j, _)| *j)
                .unwrap_or(lines.len());
            Section {
                heading: lines[i].to_string(),
                body: lines[i + 1..end].join("\n"),
            }
        })
        .collect()
}

/// The heading text that marks the section of a parser table.
fn heading_needle(table: &str) -> String {
    match table {
        "" => "Top-level tables".to_string(),
        "sim" | "solver_params" | "objective" => format!("`[{table}]`"),
        // A backend's own `[solver_params]` keys: the section headed
        // "… tuning (`name`, …)" that names the backend.
        t if t.starts_with("solver_params.") => {
            format!("backend:`{}`", &t["solver_params.".len()..])
        }
        "body" | "static" | "robot" | "control" => format!("`[[{table}]]`"),
        "objective.running" => "`[[objective.running]]`".to_string(),
        "objective.effort" => "`[objective.effort]`".to_string(),
        "part" => "`type = \"bundle\"`".to_string(),
        t if t.starts_with("shape.") => format!("`type = \"{}\"`", &t["shape.".len()..]),
        other => panic!(
            "the parser has a new table `{other}`: document it in docs/scene-format.md under a \
             heading of its own and name that heading in tests/all/cli/docs.rs (heading_needle)"
        ),
    }
}

/// The one section whose heading contains `needle` (for a backend's own
/// keys, `` `name` `` in a heading that also contains "tuning").
fn section<'a>(all: &'a [Section], needle: &str) -> Result<&'a Section, String> {
    let (needle, backend) = match needle.strip_prefix("backend:") {
        Some(n) => (n, true),
        None => (needle, false),
    };
    let found: Vec<&Section> = all
        .iter()
        .filter(|s| s.heading.contains(needle) && (!backend || s.heading.contains("tuning (")))
        .collect();
    match found.len() {
        1 => Ok(found[0]),
        0 => Err(format!(
            "no heading containing {needle} in docs/scene-format.md"
        )),
        n => Err(format!(
            "{n} headings contain {needle} in docs/scene-format.md (expected one)"
        )),
    }
}

/// The backticked names in the first cell of every row of the key tables
/// of `text`: the markdown tables whose header's first cell is `key`.
fn documented_keys(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_key_table = false;
    let mut previous_is_row = false;
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix('|') else {
            previous_is_row = false;
            continue;
        };
        let first = rest.split('|').next().unwrap_or("");
        if !previous_is_row {
            // a header row
            in_key_table = first.trim() == "key";
            previous_is_row = true;
            continue;
        }
        if in_key_table {
            for (k, part) in first.split('`').enumerate() {
                if k % 2 == 1 && !part.is_empty() {
                    out.insert(part.to_string());
                }
            }
        }
    }
    out
}

#[test]
fn every_accepted_key_is_documented_and_every_documented_key_accepted() {
    let md = doc();
    let all = sections(&md);
    let mut problems = Vec::new();
    // Keys accepted per section (several parser tables may share one).
    let mut per_section: Vec<(String, BTreeSet<String>)> = Vec::new();
    for (table, keys) in dualsim::scene::accepted_keys() {
        let needle = heading_needle(&table);
        let s = match section(&all, &needle) {
            Ok(s) => s,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let documented = documented_keys(&s.body);
        for k in keys {
            if !documented.contains(*k) {
                let shown = if table.is_empty() {
                    "the top level".to_string()
                } else {
                    format!("`{table}`")
                };
                problems.push(format!(
                    "key `{k}` of {shown} is accepted by the parser but not documented in the key table under `{}`",
                    s.heading
                ));
            }
        }
        match per_section.iter_mut().find(|(h, _)| *h == s.heading) {
            Some((_, set)) => set.extend(keys.iter().map(|k| k.to_string())),
            None => per_section.push((
                s.heading.clone(),
                keys.iter().map(|k| k.to_string()).collect(),
            )),
        }
    }
    for (heading, accepted) in &per_section {
        let s = all.iter().find(|s| &s.heading == heading).unwrap();
        for k in documented_keys(&s.body) {
            if !accepted.contains(&k) {
                problems.push(format!("`{k}` is documented as a key under `{heading}` but the parser does not accept it"));
            }
        }
    }
    for (key, values) in dualsim::scene::accepted_values() {
        let (table, _) = key.rsplit_once('.').unwrap();
        let needle = match table {
            "shape" => "## Shapes".to_string(),
            "shape.bundle" => heading_needle("shape.bundle"),
            t => heading_needle(t),
        };
        let s = match section(&all, &needle) {
            Ok(s) => s,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        for v in values {
            if !s.body.contains(&format!("`{v}`")) && !s.body.contains(&format!("\"{v}\"")) {
                problems.push(format!(
                    "value `{v}` of `{key}` is accepted but not named under `{}`",
                    s.heading
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "docs/scene-format.md is out of date:\n  {}",
        problems.join("\n  ")
    );
}

/// The ```toml blocks of `md`.
fn toml_blocks(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, Vec<&str>)> = None;
    for (i, line) in md.lines().enumerate() {
        let t = line.trim_start();
        match &mut current {
            None if t.starts_with("```toml") => current = Some((i + 2, Vec::new())),
            Some((start, body)) if t.starts_with("```") => {
                out.push((*start, body.join("\n") + "\n"));
                current = None;
            }
            Some((_, body)) => body.push(line),
            None => {}
        }
    }
    assert!(
        current.is_none(),
        "docs/scene-format.md: unterminated ```toml block"
    );
    out
}

/// Every key name used anywhere in a TOML value.
fn keys_used(v: &toml::Value, out: &mut BTreeSet<String>) {
    match v {
        toml::Value::Table(t) => {
            for (k, x) in t {
                out.insert(k.clone());
                keys_used(x, out);
            }
        }
        toml::Value::Array(a) => a.iter().for_each(|x| keys_used(x, out)),
        _ => {}
    }
}

/// Loads every complete scene (```toml block starting with `# scene`) of
/// the markdown file `rel`, as if it were a file in `dir` (relative to the
/// repository); returns the number of scenes, the keys they use, and the
/// problems found.
fn load_scenes(rel: &str, dir: &str) -> (usize, BTreeSet<String>, Vec<String>) {
    let md = std::fs::read_to_string(root().join(rel)).unwrap();
    let mut problems = Vec::new();
    let mut used = BTreeSet::new();
    let mut scenes = 0;
    for (line, src) in toml_blocks(&md) {
        let value: toml::Value = match toml::from_str::<toml::Table>(&src) {
            Ok(t) => toml::Value::Table(t),
            Err(e) => {
                problems.push(format!("{rel}:{line}: not valid TOML: {e}"));
                continue;
            }
        };
        if !src.starts_with("# scene") {
            continue;
        }
        scenes += 1;
        keys_used(&value, &mut used);
        let file = root()
            .join(dir)
            .join(format!("{}-line-{line}.toml", rel.replace('/', "-")));
        if let Err(e) = dualsim::scene::parse(&src, &file.display().to_string()) {
            problems.push(format!("{rel}:{line}: the scene is rejected: {e}"));
        }
    }
    (scenes, used, problems)
}

#[test]
fn every_complete_scene_in_the_document_loads_and_together_they_use_every_key() {
    // As files in examples/scenes/: URDF paths resolve there.
    let (scenes, used, mut problems) = load_scenes("docs/scene-format.md", "examples/scenes");
    assert!(
        scenes >= 5,
        "expected at least 5 complete scenes (```toml blocks starting with `# scene`), found {scenes}"
    );
    for (table, keys) in dualsim::scene::accepted_keys() {
        for k in keys {
            if !used.contains(*k) {
                problems.push(format!(
                    "no complete scene of docs/scene-format.md uses the key `{k}` ({}); add one so it is checked",
                    if table.is_empty() { "top level" } else { &table }
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_readme_scene_loads() {
    let (scenes, _, problems) = load_scenes("README.md", ".");
    assert!(
        scenes >= 1,
        "the README's tour has no complete scene (```toml block starting with `# scene`)"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The README's API section is `examples/api_tour.rs` (which `cargo test`
/// compiles), between its `// README begin` and `// README end` lines.
#[test]
fn the_readme_api_snippet_is_the_compiled_example() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let example = std::fs::read_to_string(root().join("examples/api_tour.rs")).unwrap();
    let begin = example
        .find("// README begin\n")
        .expect("`// README begin` in examples/api_tour.rs");
    let end = example
        .find("// README end")
        .expect("`// README end` in examples/api_tour.rs");
    let snippet = &example[begin + "// README begin\n".len()..end];
    let block = format!("```rust\n{snippet}```");
    assert!(
        readme.contains(&block),
        "README.md must contain examples/api_tour.rs's code between `// README begin` and `// README end` \
         as a ```rust block, verbatim:\n{block}"
    );
}

/// The markdown links of `text` (`[label](target)`), with their line.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(k) = rest.find("](") {
            let after = &rest[k + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((i + 1, after[..end].to_string()));
            rest = &after[end..];
        }
    }
    out
}

/// The user's documentation must stand on its own: no mention of the
/// engineers' design folder, and every relative link resolves to a file or
/// directory of the repository.
#[test]
fn readme_and_docs_point_only_inside_the_repository() {
    let repo = root().canonicalize().unwrap();
    let mut files = vec![root().join("README.md")];
    for e in std::fs::read_dir(root().join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            files.push(p);
        }
    }
    assert!(files.len() >= 7, "README.md and the six docs/ pages");
    let mut problems = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let name = f.strip_prefix(root()).unwrap().display().to_string();
        if text.contains("shared/") || text.contains("SCENE.md") || text.contains("ARCHITECTURE.md")
        {
            problems.push(format!(
                "{name} mentions the engineers' design documents, which users cannot see"
            ));
        }
        for (line, target) in links(&text) {
            if target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with('#')
            {
                continue;
            }
            let path = target.split('#').next().unwrap();
            let resolved = f.parent().unwrap().join(path);
            match resolved.canonicalize() {
                Ok(p) if p.starts_with(&repo) => {}
                Ok(_) => problems.push(format!(
                    "{name}:{line}: `{target}` points outside the repository"
                )),
                Err(_) => problems.push(format!("{name}:{line}: `{target}` does not exist")),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dualsim"))
}

fn json_of(args: &[&str]) -> serde_json::Value {
    let out = bin().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "dualsim {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("dualsim {args:?}: not one JSON document: {e}"))
}

fn json_keys(v: &serde_json::Value, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                out.insert(k.clone());
                json_keys(x, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| json_keys(x, out)),
        _ => {}
    }
}

#[test]
fn every_key_of_every_json_output_is_documented() {
    let scene = root().join("examples/scenes/free_flight.toml");
    let scene = scene.to_str().unwrap();
    let opt_scene = root().join("examples/scenes/opt_projectile.toml");
    let dir = std::env::temp_dir().join(format!("dualsim-docs-test-{}", std::process::id()));
    let dir_s = dir.to_str().unwrap();
    let mut outputs: Vec<(&str, serde_json::Value)> = vec![
        (
            "run --json",
            json_of(&["run", scene, "--steps", "5", "--json", "--out", dir_s]),
        ),
        (
            "check --json",
            json_of(&["check", scene, "--samples", "1", "--json"]),
        ),
        (
            "grad --json",
            json_of(&[
                "grad",
                scene,
                "--of",
                "ball.position",
                "--wrt",
                "ball.velocity",
                "--json",
            ]),
        ),
        ("bench --json", json_of(&["bench", scene, "--json"])),
        (
            "hessian --check --json",
            json_of(&["hessian", opt_scene.to_str().unwrap(), "--check", "--json"]),
        ),
        (
            "optimize --json",
            json_of(&["optimize", opt_scene.to_str().unwrap(), "--json"]),
        ),
        (
            "info --json",
            json_of(&[
                "info",
                root()
                    .join("tests/data/meshes/info_scene.toml")
                    .to_str()
                    .unwrap(),
                "--json",
            ]),
        ),
    ];
    let traj = std::fs::read_to_string(Path::new(&dir).join("trajectory.json")).unwrap();
    outputs.push(("the --out trajectory", serde_json::from_str(&traj).unwrap()));
    // `inverse` of a `convex` run of a pushed box.
    let push = root().join("tests/data/box_push_convex.toml");
    let push = push.to_str().unwrap();
    let inv_dir = dir.join("inverse");
    let inv_s = inv_dir.to_str().unwrap();
    json_of(&["run", push, "--steps", "5", "--json", "--out", inv_s]);
    let inv_traj = inv_dir.join("trajectory.json");
    outputs.push((
        "inverse --json",
        json_of(&["inverse", push, inv_traj.to_str().unwrap(), "--json"]),
    ));
    let _ = std::fs::remove_dir_all(&dir);
    // A failed run's report (its `error` field).
    let s = dualsim::scene::load(Path::new(scene)).unwrap();
    let failed: Result<dualsim::sim::Trajectory<f64>, _> = Err(dualsim::sim::RolloutError {
        step: 0,
        error: dualsim::sim::SimError::NonFinite { what: "state" },
        completed: dualsim::sim::Trajectory {
            states: vec![s.initial.clone()],
            stats: Vec::new(),
        },
    });
    let report = dualsim::viz::run_report(&s, &failed, 0.0);
    outputs.push(("a failed run", serde_json::to_value(&report).unwrap()));

    let md = doc();
    let all = sections(&md);
    let out_section = section(&all, "Command output").unwrap_or_else(|e| panic!("{e}"));
    let mut problems = Vec::new();
    for (what, v) in &outputs {
        let mut keys = BTreeSet::new();
        json_keys(v, &mut keys);
        assert!(!keys.is_empty(), "{what}: no keys");
        for k in keys {
            if !out_section.body.contains(&format!("\"{k}\""))
                && !out_section.body.contains(&format!("`{k}`"))
            {
                problems.push(format!(
                    "`{k}` of {what} is not documented under `{}`",
                    out_section.heading
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "docs/scene-format.md is out of date:\n  {}",
        problems.join("\n  ")
    );
}

/// After the demonstration the program suggests commands to try: each of
/// them works (run from a directory holding the demo's output and the
/// repository's `examples/`, as a user in a clone would).
#[test]
fn the_demo_suggestions_work() {
    let dir = std::env::temp_dir().join(format!("dualsim-docs-demo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(root().join("examples"), dir.join("examples")).unwrap();
    let out = bin().current_dir(&dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let prefix = "cargo run --release -- ";
    let suggestions: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix(prefix))
        .map(|l| l.split('#').next().unwrap().trim())
        .collect();
    assert!(
        suggestions.len() >= 3,
        "the demo suggests at least three commands:\n{text}"
    );
    for s in suggestions {
        let args: Vec<&str> = s.split_whitespace().collect();
        let r = bin().current_dir(&dir).args(&args).output().unwrap();
        assert!(
            r.status.success(),
            "suggested `dualsim {s}` fails: {}",
            String::from_utf8_lossy(&r.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

//! The optimized scene: the original scene file with the decision
//! variables' values written in (for `dualsim optimize --out`).

use toml::{Table, Value};

use super::{Objective, OptError};
use crate::diff::Input;

fn floats(v: &[f64]) -> Value {
    Value::Array(v.iter().map(|x| Value::Float(*x)).collect())
}

/// The entry of the array of tables `key` whose `name` is `name`.
fn named<'t>(root: &'t mut Table, key: &str, name: &str) -> Option<&'t mut Table> {
    root.get_mut(key)?
        .as_array_mut()?
        .iter_mut()
        .filter_map(Value::as_table_mut)
        .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
}

/// The scene source `src` with the values of the decision variables at δ
/// written in: body and robot fields, model parameters and `[sim]`
/// entries in place; a `control` decision variable replaces the target's
/// `[[control]]` tables by one with `per_step` rows. Comments and layout
/// are not kept (the document is re-serialized).
pub fn optimized_scene_toml(src: &str, obj: &Objective, delta: &[f64]) -> Result<String, OptError> {
    let bad = |m: String| OptError::BadObjective(m);
    let mut root: Table = src
        .parse()
        .map_err(|e: toml::de::Error| bad(e.to_string()))?;
    let (w, _, us) = obj.at(delta)?;
    let solution = obj.solution(delta)?;
    for ((label, inputs), (_, values)) in obj.groups.iter().zip(&solution) {
        let (name, field) = split_label(obj, label);
        if name == "sim" {
            let sim = root
                .entry("sim")
                .or_insert_with(|| Value::Table(Table::new()));
            let Some(sim) = sim.as_table_mut() else {
                return Err(bad("[sim] is not a table".into()));
            };
            sim.insert(
                field.to_string(),
                if values.len() == 1 {
                    Value::Float(values[0])
                } else {
                    floats(values)
                },
            );
            continue;
        }
        if let Some(Input::Control { .. }) = inputs.first() {
            // the target's columns of every step's control
            let (k, width) = match w.robot_index(name) {
                Some(ri) => (w.robots[ri].idx_v, w.robots[ri].nv),
                None => {
                    let b = w
                        .model
                        .body_index(name)
                        .ok_or_else(|| bad(format!("no body `{name}`")))?;
                    (w.model.bodies[b].idx_v, 6)
                }
            };
            let rows: Vec<Value> = (0..obj.steps)
                .map(|s| floats(&us.at(s).as_slice()[k..k + width]))
                .collect();
            let mut c = Table::new();
            c.insert("target".into(), Value::String(name.to_string()));
            c.insert("per_step".into(), Value::Array(rows));
            let list = root
                .entry("control")
                .or_insert_with(|| Value::Array(Vec::new()));
            let Some(list) = list.as_array_mut() else {
                return Err(bad("`control` is not an array of tables".into()));
            };
            list.retain(|t| t.get("target").and_then(Value::as_str) != Some(name));
            list.push(Value::Table(c));
            continue;
        }
        let key = if named(&mut root, "body", name).is_some() {
            "body"
        } else {
            "robot"
        };
        let table = named(&mut root, key, name).ok_or_else(|| {
            bad(format!(
                "no [[body]] or [[robot]] named `{name}` in the file"
            ))
        })?;
        if let Some(key) = field.strip_prefix("shape.") {
            let shape = table
                .get_mut("shape")
                .and_then(Value::as_table_mut)
                .ok_or_else(|| bad(format!("`{name}` has no shape table")))?;
            let arr = matches!(key, "half_extents" | "radii");
            shape.insert(
                key.to_string(),
                if arr {
                    floats(values)
                } else {
                    Value::Float(values[0])
                },
            );
        } else if field == "inertia" {
            // keep a 3x3 matrix's off-diagonal entries
            match table.get_mut("inertia").and_then(Value::as_array_mut) {
                Some(rows) if rows.iter().all(Value::is_array) => {
                    for (i, r) in rows.iter_mut().enumerate().take(3) {
                        if let Some(r) = r.as_array_mut() {
                            r[i] = Value::Float(values[i]);
                        }
                    }
                }
                _ => {
                    table.insert("inertia".into(), floats(values));
                }
            }
        } else if values.len() == 1 {
            table.insert(field.to_string(), Value::Float(values[0]));
        } else {
            table.insert(field.to_string(), floats(values));
        }
    }
    toml::to_string(&root).map_err(|e| bad(e.to_string()))
}

/// `NAME.FIELD` split at the longest body, robot or `sim` name.
fn split_label<'l>(obj: &Objective, label: &'l str) -> (&'l str, &'l str) {
    let w = &obj.world;
    let names = w
        .model
        .bodies
        .iter()
        .map(|b| b.name.as_str())
        .chain(w.robots.iter().map(|r| r.name.as_str()))
        .chain(std::iter::once("sim"));
    let best = names
        .filter(|n| {
            label.len() > n.len() + 1 && label.starts_with(n) && label.as_bytes()[n.len()] == b'.'
        })
        .max_by_key(|n| n.len());
    match best {
        Some(n) => (&label[..n.len()], &label[n.len() + 1..]),
        None => label.split_once('.').unwrap_or((label, "")),
    }
}

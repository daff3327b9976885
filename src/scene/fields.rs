//! Reading located values from the TOML tree: the parse context that turns
//! a span into a [`SceneError`], the table reader that reports unknown and
//! missing keys, and the typed, range-checked readers of single values
//! (numbers, vectors, quaternions, sizes, booleans, enumerated names).

use std::ops::Range;
use std::path::Path;

use toml::Spanned;
use toml::de::{DeArray, DeTable, DeValue};

use super::SceneError;
use crate::math::{Quat, Vec3};
use crate::sim::validate::{self as limits, range_text};

pub(super) struct Cx<'a> {
    pub(super) src: &'a str,
    pub(super) file: &'a str,
}

impl Cx<'_> {
    pub(super) fn error(
        &self,
        span: Range<usize>,
        path: &str,
        message: impl Into<String>,
    ) -> SceneError {
        let at = span.start.min(self.src.len());
        let before = &self.src[..at];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        let column = self.src[line_start..at].chars().count() + 1;
        SceneError {
            file: self.file.to_string(),
            line,
            column,
            path: path.to_string(),
            message: message.into(),
        }
    }
}

pub(super) type R<T> = Result<T, SceneError>;
pub(super) type Val<'i> = Spanned<DeValue<'i>>;

/// A table being read: remembers which keys were used so that unknown keys
/// are reported.
pub(super) struct Tab<'a, 'i> {
    pub(super) cx: &'a Cx<'a>,
    pub(super) map: &'a DeTable<'i>,
    pub(super) span: Range<usize>,
    pub(super) path: String,
    /// The keys this table accepts (one of the `*_KEYS` lists): a key is
    /// read only if it is listed, so these lists are exactly what the
    /// parser accepts ([`super::accepted_keys`]).
    pub(super) keys: &'static [&'static str],
    pub(super) used: Vec<&'a str>,
}

impl<'a, 'i> Tab<'a, 'i> {
    pub(super) fn new(
        cx: &'a Cx<'a>,
        map: &'a DeTable<'i>,
        span: Range<usize>,
        path: String,
        keys: &'static [&'static str],
    ) -> Self {
        Tab {
            cx,
            map,
            span,
            path,
            keys,
            used: Vec::new(),
        }
    }

    pub(super) fn child_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    pub(super) fn get(&mut self, key: &'a str) -> Option<(&'a Val<'i>, String)> {
        // A key missing from the table's list is never read: it is then
        // reported by `finish` as unknown, like any other.
        if !self.keys.contains(&key) {
            return None;
        }
        let (_, v) = self.map.iter().find(|(k, _)| k.get_ref().as_ref() == key)?;
        self.used.push(key);
        Some((v, self.child_path(key)))
    }

    pub(super) fn missing(&self, key: &str) -> SceneError {
        self.cx.error(
            self.span.clone(),
            &self.child_path(key),
            "missing required field",
        )
    }

    pub(super) fn finish(self) -> R<()> {
        for (k, _) in self.map.iter() {
            let name: &str = k.get_ref().as_ref();
            if !self.used.contains(&name) {
                return Err(self.cx.error(
                    k.span(),
                    &self.child_path(name),
                    format!("unknown key (expected one of: {})", self.keys.join(", ")),
                ));
            }
        }
        Ok(())
    }

    pub(super) fn f64_req(&mut self, key: &'a str) -> R<(f64, Range<usize>, String)> {
        let Some((v, p)) = self.get(key) else {
            return Err(self.missing(key));
        };
        Ok((num(self.cx, v, &p)?, v.span(), p))
    }

    pub(super) fn vec_opt<const N: usize>(
        &mut self,
        key: &'a str,
    ) -> R<Option<([f64; N], Range<usize>, String)>> {
        match self.get(key) {
            None => Ok(None),
            Some((v, p)) => Ok(Some((nums::<N>(self.cx, v, &p)?, v.span(), p))),
        }
    }

    pub(super) fn str_opt(&mut self, key: &'a str) -> R<Option<(&'a str, Range<usize>, String)>> {
        match self.get(key) {
            None => Ok(None),
            Some((v, p)) => match v.get_ref() {
                DeValue::String(s) => Ok(Some((s.as_ref(), v.span(), p))),
                other => Err(type_error(self.cx, v, &p, "a string", other)),
            },
        }
    }

    pub(super) fn table(
        &mut self,
        key: &'a str,
        keys: &'static [&'static str],
    ) -> R<Option<Tab<'a, 'i>>> {
        match self.get(key) {
            None => Ok(None),
            Some((v, p)) => match v.get_ref() {
                DeValue::Table(t) => Ok(Some(Tab::new(self.cx, t, v.span(), p, keys))),
                other => Err(type_error(self.cx, v, &p, "a table", other)),
            },
        }
    }

    pub(super) fn array_of_tables(
        &mut self,
        key: &'a str,
        keys: &'static [&'static str],
    ) -> R<Vec<Tab<'a, 'i>>> {
        let Some((v, p)) = self.get(key) else {
            return Ok(Vec::new());
        };
        let arr = array(self.cx, v, &p)?;
        arr.iter()
            .enumerate()
            .map(|(i, e)| match e.get_ref() {
                DeValue::Table(t) => Ok(Tab::new(self.cx, t, e.span(), format!("{p}[{i}]"), keys)),
                other => Err(type_error(
                    self.cx,
                    e,
                    &format!("{p}[{i}]"),
                    "a table",
                    other,
                )),
            })
            .collect()
    }
}

pub(super) fn type_error(cx: &Cx, v: &Val, path: &str, want: &str, got: &DeValue) -> SceneError {
    cx.error(
        v.span(),
        path,
        format!("expected {want}, found {}", got.type_str()),
    )
}

pub(super) fn array<'a, 'i>(cx: &Cx, v: &'a Val<'i>, path: &str) -> R<&'a DeArray<'i>> {
    match v.get_ref() {
        DeValue::Array(a) => Ok(a),
        other => Err(type_error(cx, v, path, "an array", other)),
    }
}

/// A finite number (integer or float).
pub(super) fn num(cx: &Cx, v: &Val, path: &str) -> R<f64> {
    let x = match v.get_ref() {
        DeValue::Float(f) => {
            let s: String = f.as_str().chars().filter(|c| *c != '_').collect();
            s.parse::<f64>()
                .map_err(|_| cx.error(v.span(), path, "not a number"))?
        }
        DeValue::Integer(i) => {
            let s: String = i.as_str().chars().filter(|c| *c != '_').collect();
            let digits = s.trim_start_matches(['+', '-']);
            let digits = digits
                .strip_prefix("0x")
                .or_else(|| digits.strip_prefix("0o"))
                .or_else(|| digits.strip_prefix("0b"))
                .unwrap_or(digits);
            let mag = i64::from_str_radix(digits, i.radix())
                .map_err(|_| cx.error(v.span(), path, "integer out of range"))?;
            if s.starts_with('-') {
                -(mag as f64)
            } else {
                mag as f64
            }
        }
        other => return Err(type_error(cx, v, path, "a number", other)),
    };
    if !x.is_finite() {
        return Err(cx.error(v.span(), path, format!("must be a finite number, got {x}")));
    }
    Ok(x)
}

pub(super) fn nums<const N: usize>(cx: &Cx, v: &Val, path: &str) -> R<[f64; N]> {
    let a = array(cx, v, path)?;
    if a.len() != N {
        return Err(cx.error(
            v.span(),
            path,
            format!("expected {N} numbers, found {}", a.len()),
        ));
    }
    let mut out = [0.0; N];
    for (i, e) in a.iter().enumerate() {
        out[i] = num(cx, e, &format!("{path}[{i}]"))?;
    }
    Ok(out)
}

pub(super) fn num_list(cx: &Cx, v: &Val, path: &str) -> R<Vec<f64>> {
    array(cx, v, path)?
        .iter()
        .enumerate()
        .map(|(i, e)| num(cx, e, &format!("{path}[{i}]")))
        .collect()
}

/// `package_dirs`: existing folders, relative to the scene file's folder.
pub(super) fn package_dirs(
    cx: &Cx,
    v: &Val,
    path: &str,
    base_dir: &Path,
) -> R<Vec<std::path::PathBuf>> {
    array(cx, v, path)?
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let p = format!("{path}[{i}]");
            match e.get_ref() {
                DeValue::String(s) => {
                    let dir = base_dir.join(s.as_ref() as &str);
                    match dir.is_dir() {
                        true => Ok(dir),
                        false => Err(cx.error(
                            e.span(),
                            &p,
                            format!("package directory `{}` does not exist", dir.display()),
                        )),
                    }
                }
                other => Err(type_error(cx, e, &p, "a string", other)),
            }
        })
        .collect()
}

pub(super) fn choose<T: Copy>(
    cx: &Cx,
    found: Option<(&str, Range<usize>, String)>,
    options: &[(&str, T)],
    default: T,
) -> R<T> {
    let Some((s, span, path)) = found else {
        return Ok(default);
    };
    options
        .iter()
        .find(|(n, _)| *n == s)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
            cx.error(
                span,
                &path,
                format!(
                    "unknown value `{s}` (expected one of: {})",
                    names.join(", ")
                ),
            )
        })
}

/// `x` within `[lo, hi]` (the ranges of [`crate::sim::validate`]).
pub(super) fn in_range(
    cx: &Cx,
    span: Range<usize>,
    path: &str,
    x: f64,
    r: (f64, f64),
    unit: &str,
) -> R<()> {
    if x >= r.0 && x <= r.1 {
        Ok(())
    } else {
        Err(cx.error(
            span,
            path,
            format!(
                "{x:e} is outside the simulable range {}{unit} (see docs/validation.md)",
                range_text(r)
            ),
        ))
    }
}

/// The norm `n` of a vector field within `[lo, hi]`.
pub(super) fn norm_in_range(
    cx: &Cx,
    span: Range<usize>,
    path: &str,
    n: f64,
    r: (f64, f64),
    unit: &str,
) -> R<()> {
    if n >= r.0 && n <= r.1 {
        Ok(())
    } else {
        Err(cx.error(
            span,
            path,
            format!(
                "its norm {n:e} is outside the simulable range {}{unit} (see docs/validation.md)",
                range_text(r)
            ),
        ))
    }
}

/// `|x| ≤ max`.
pub(super) fn in_abs(
    cx: &Cx,
    span: Range<usize>,
    path: &str,
    x: f64,
    max: f64,
    unit: &str,
) -> R<()> {
    if x.abs() <= max {
        Ok(())
    } else {
        Err(cx.error(
            span,
            path,
            format!(
                "{x:e} is outside the simulable range |x| <= {max:e}{unit} (see docs/validation.md)"
            ),
        ))
    }
}

/// A scene value as a `toml::Value` (for the backends' serde-read tuning).
pub(super) fn to_toml(cx: &Cx, v: &Val, path: &str) -> R<toml::Value> {
    Ok(match v.get_ref() {
        DeValue::Boolean(b) => toml::Value::Boolean(*b),
        DeValue::String(s) => toml::Value::String(s.to_string()),
        DeValue::Integer(_) => {
            let x = num(cx, v, path)?;
            if x.abs() > 9.0e15 {
                return Err(cx.error(v.span(), path, "integer out of range"));
            }
            toml::Value::Integer(x as i64)
        }
        DeValue::Float(_) => toml::Value::Float(num(cx, v, path)?),
        DeValue::Array(a) => toml::Value::Array(
            a.iter()
                .enumerate()
                .map(|(i, e)| to_toml(cx, e, &format!("{path}[{i}]")))
                .collect::<R<Vec<_>>>()?,
        ),
        DeValue::Table(t) => {
            let mut out = toml::Table::new();
            for (k, e) in t.iter() {
                let key: &str = k.get_ref().as_ref();
                out.insert(key.to_string(), to_toml(cx, e, &format!("{path}.{key}"))?);
            }
            toml::Value::Table(out)
        }
        other => {
            return Err(type_error(
                cx,
                v,
                path,
                "a number, boolean, string, array or table",
                other,
            ));
        }
    })
}

pub(super) fn boolean(cx: &Cx, v: &Val, path: &str) -> R<bool> {
    match v.get_ref() {
        DeValue::Boolean(b) => Ok(*b),
        other => Err(type_error(cx, v, path, "a boolean", other)),
    }
}

/// The optional `position` (default 0) and `orientation` (unit quaternion,
/// default identity) of a table.
pub(super) fn pose_fields<'a>(cx: &Cx, t: &mut Tab<'a, '_>) -> R<([f64; 3], Quat<f64>)> {
    let pos = t.vec_opt::<3>("position")?.map(|x| x.0).unwrap_or([0.0; 3]);
    let rot = match t.vec_opt::<4>("orientation")? {
        None => Quat::new(1.0, 0.0, 0.0, 0.0),
        Some((o, span, p)) => unit_quat(cx, o, span, &p)?,
    };
    Ok((pos, rot))
}

/// A required list of 3-vectors (`normals`, `points`), with the value and
/// path of the field for later errors.
pub(super) fn vec3_list<'a, 'i>(
    cx: &Cx,
    t: &mut Tab<'a, 'i>,
    key: &'a str,
) -> R<(Vec<Vec3<f64>>, &'a Val<'i>, String)> {
    let Some((v, p)) = t.get(key) else {
        return Err(t.missing(key));
    };
    let list = array(cx, v, &p)?
        .iter()
        .enumerate()
        .map(|(i, e)| nums::<3>(cx, e, &format!("{p}[{i}]")).map(Vec3::from))
        .collect::<R<Vec<_>>>()?;
    Ok((list, v, p))
}

pub(super) fn unit_quat(cx: &Cx, o: [f64; 4], span: Range<usize>, path: &str) -> R<Quat<f64>> {
    let n = (o[0] * o[0] + o[1] * o[1] + o[2] * o[2] + o[3] * o[3]).sqrt();
    if (n - 1.0).abs() > 1e-6 {
        return Err(cx.error(
            span,
            path,
            format!("quaternion [w, x, y, z] must have unit norm (within 1e-6), its norm is {n}"),
        ));
    }
    Ok(Quat::new(o[0] / n, o[1] / n, o[2] / n, o[3] / n))
}

/// A required size: > 0 and within [`limits::SIZE`].
pub(super) fn positive(cx: &Cx, t: &mut Tab, key: &'static str) -> R<f64> {
    let (x, span, p) = t.f64_req(key)?;
    if x <= 0.0 {
        return Err(cx.error(span, &p, format!("must be > 0, got {x}")));
    }
    in_range(cx, span, &p, x, limits::SIZE, " m")?;
    Ok(x)
}

/// Three sizes (> 0, within [`limits::SIZE`]).
pub(super) fn sizes3(
    cx: &Cx,
    x: [f64; 3],
    span: Range<usize>,
    p: &str,
    what: &str,
) -> R<Vec3<f64>> {
    if x.iter().any(|x| *x <= 0.0) {
        return Err(cx.error(span, p, format!("{what} must be > 0")));
    }
    for (d, c) in x.iter().enumerate() {
        in_range(
            cx,
            span.clone(),
            &format!("{p}[{d}]"),
            *c,
            limits::SIZE,
            " m",
        )?;
    }
    Ok(Vec3::from(x))
}

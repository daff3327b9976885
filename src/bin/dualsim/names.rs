//! The value parsers of the command line's closed sets of names (contact
//! backends, derivative methods, partials and gradient modes, Hessian and
//! optimization methods): `--help` lists them, an unknown name is refused
//! with the closest one.

use dualsim::contact::SolverKind;
use dualsim::diff::{Gradient, Method, Partials, names};
use dualsim::opt::{HessianMethod, OptMethod};

/// A command-line value parser over a closed set of names (the library's
/// own lists: `SolverKind::NAMES`, `Method::ALL`, …): `--help` lists the
/// names; an unknown name is refused (exit 2) with the closest one
/// ("did you mean") and every valid name; a name the library knows but
/// this build lacks (a planned backend) is refused saying so.
#[derive(Clone)]
pub(crate) struct Names<T: Clone + Send + Sync + 'static> {
    what: &'static str,
    names: Vec<(&'static str, Option<T>)>,
}

impl<T: Clone + Send + Sync + 'static> Names<T> {
    fn new(what: &'static str, names: impl IntoIterator<Item = (&'static str, Option<T>)>) -> Self {
        Names {
            what,
            names: names.into_iter().collect(),
        }
    }

    fn available(&self) -> Vec<&'static str> {
        self.names
            .iter()
            .filter(|(_, v)| v.is_some())
            .map(|(n, _)| *n)
            .collect()
    }
}

impl<T: Clone + Send + Sync + 'static> clap::builder::TypedValueParser for Names<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let flag = arg
            .and_then(|a| a.get_long())
            .map(|l| format!("--{l} "))
            .unwrap_or_default();
        let s = value.to_string_lossy();
        let available = self.available();
        let message = match self.names.iter().find(|(n, _)| *n == s) {
            Some((_, Some(v))) => return Ok(v.clone()),
            Some((_, None)) => format!(
                "{flag}{s}: the {} `{s}` is not in this build (available: {})\n",
                self.what,
                available.join(", ")
            ),
            None => format!(
                "{flag}{s}: unknown {} `{s}`{} (valid: {})\n",
                self.what,
                names::suggest(&s, available.iter().copied()),
                available.join(", ")
            ),
        };
        Err(clap::Error::raw(clap::error::ErrorKind::InvalidValue, message).with_cmd(cmd))
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            self.available()
                .into_iter()
                .map(clap::builder::PossibleValue::new),
        ))
    }
}

pub(crate) fn solver_names() -> Names<SolverKind> {
    Names::new("contact backend", SolverKind::NAMES.iter().copied())
}

pub(crate) fn method_names() -> Names<Method> {
    Names::new(
        "derivative method",
        Method::ALL.into_iter().map(|m| (m.name(), Some(m))),
    )
}

pub(crate) fn partials_names() -> Names<Partials> {
    Names::new(
        "partials mode",
        [Partials::Kernel, Partials::Dual]
            .into_iter()
            .map(|p| (p.name(), Some(p))),
    )
}

pub(crate) fn gradient_names() -> Names<Gradient> {
    Names::new(
        "gradient mode",
        Gradient::ALL.into_iter().map(|g| (g.name(), Some(g))),
    )
}

pub(crate) fn hessian_names() -> Names<HessianMethod> {
    Names::new(
        "Hessian method",
        HessianMethod::ALL.into_iter().map(|m| (m.name(), Some(m))),
    )
}

pub(crate) fn opt_names() -> Names<OptMethod> {
    Names::new(
        "optimization method",
        OptMethod::ALL.into_iter().map(|m| (m.name(), Some(m))),
    )
}

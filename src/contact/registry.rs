//! The one registry of contact backends.
//!
//! The list itself is in `contact/mod.rs`. Each line names a backend (its
//! name in scene files, on the command line, as the field of
//! [`BackendParams`](crate::contact::BackendParams) and as its folder under `contact/`), its
//! [`SolverKind`](crate::contact::SolverKind) variant and its type (in that module), which implements
//! [`ContactBackend`](crate::contact::ContactBackend). The `backends!` macro generates from the list:
//!
//! * the backend's module (`pub mod <name>;`, the folder `contact/<name>/`);
//! * [`SolverKind`](crate::contact::SolverKind): the closed set of backends, with [`SolverKind::NAMES`](crate::contact::SolverKind::NAMES)
//!   (with the names of the backends planned but not in this build, so that
//!   a scene file naming one gets "not in this build" rather than "unknown"),
//!   parsing, the feature table ([`SolverKind::supports`](crate::contact::SolverKind::supports)) and each
//!   backend's `[solver_params]` keys;
//! * [`BackendParams`](crate::contact::BackendParams): every backend's tuning, one field per backend,
//!   read from `[solver_params]` by the scene loader;
//! * `with_backend!`: the one `match` from a [`SolverKind`](crate::contact::SolverKind) to the backend
//!   value, used by `sim::step` and by `diff`.
//!
//! Adding a backend is its folder under `contact/` and one line of the
//! list.
//! (One enum and one `match`, not trait objects: the contract is generic
//! over the scalar, which rules trait objects out.)

macro_rules! backends {
    (
        $d:tt;
        default: $Default:ident;
        planned: [ $($planned:literal),* $(,)? ];
        $( $(#[$doc:meta])* $field:ident => $Variant:ident : $Type:ident, )*
    ) => {
        $(
            #[doc(hidden)]
            pub mod $field;
        )*

        /// The contact backends of this build, by name (see
        /// `contact::registry`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum SolverKind {
            $( $(#[$doc])* $Variant, )*
        }

        impl Default for SolverKind {
            fn default() -> Self {
                SolverKind::$Default
            }
        }

        impl SolverKind {
            /// Every backend of this build, in registry order.
            pub const ALL: &'static [SolverKind] = &[$(SolverKind::$Variant),*];

            /// Every name a scene file may use, with whether this build has
            /// it (`None`: planned, not in this build).
            pub const NAMES: &'static [(&'static str, Option<SolverKind>)] = &[
                $( (stringify!($field), Some(SolverKind::$Variant)), )*
                $( ($planned, None), )*
            ];

            /// The default backend.
            pub const DEFAULT: SolverKind = SolverKind::$Default;

            /// The backend's name as used in scene files and on the command
            /// line.
            pub fn name(&self) -> &'static str {
                match self {
                    $( SolverKind::$Variant => stringify!($field), )*
                }
            }

            /// Whether the backend models `feature` (its
            /// [`ContactBackend::supports`]).
            pub fn supports(&self, feature: Feature) -> bool {
                match self {
                    $( SolverKind::$Variant => <$crate::contact::$field::$Type as ContactBackend>::supports(feature), )*
                }
            }

            /// Whether the backend relaxes complementarity to ρ
            /// ([`ContactBackend::RELAXED`]).
            pub fn relaxed(&self) -> bool {
                match self {
                    $( SolverKind::$Variant => <$crate::contact::$field::$Type as ContactBackend>::RELAXED, )*
                }
            }

            /// The keys of the backend's own `[solver_params]` (its
            /// [`ContactBackend::Params`] fields).
            pub fn param_keys(&self) -> &'static [&'static str] {
                match self {
                    $( SolverKind::$Variant => param_keys::<<$crate::contact::$field::$Type as ContactBackend>::Params>(), )*
                }
            }

            /// The backend's contact candidate margin under `params`.
            pub fn contact_margin(&self, params: &BackendParams) -> f64 {
                match self {
                    $( SolverKind::$Variant => <$crate::contact::$field::$Type as ContactBackend>::contact_margin(&params.$field), )*
                }
            }
        }

        impl std::fmt::Display for SolverKind {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for SolverKind {
            type Err = UnknownBackend;
            /// A backend of this build by name; a planned or unknown name is
            /// an [`UnknownBackend`] that says which.
            fn from_str(s: &str) -> Result<Self, UnknownBackend> {
                match SolverKind::NAMES.iter().find(|(n, _)| *n == s) {
                    Some((_, Some(k))) => Ok(*k),
                    Some((_, None)) => Err(UnknownBackend { name: s.to_string(), planned: true }),
                    None => Err(UnknownBackend { name: s.to_string(), planned: false }),
                }
            }
        }

        /// Every backend's tuning (`[solver_params]` beyond the shared
        /// keys), one field per backend, named as the backend.
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct BackendParams {
            $(
                #[doc = concat!("Tuning of `", stringify!($field), "`.")]
                pub $field: <$crate::contact::$field::$Type as ContactBackend>::Params,
            )*
        }

        impl BackendParams {
            /// Reads the `kind` backend's tuning from a TOML table of its
            /// keys (every key optional; unknown keys refused), onto the
            /// defaults, and checks it
            /// ([`ContactBackend::check_params`]).
            pub fn set_from_toml(&mut self, kind: SolverKind, table: toml::Table) -> Result<(), String> {
                match kind {
                    $( SolverKind::$Variant => {
                        let p: <$crate::contact::$field::$Type as ContactBackend>::Params =
                            serde::Deserialize::deserialize(toml::Value::Table(table)).map_err(|e| e.to_string())?;
                        <$crate::contact::$field::$Type as ContactBackend>::check_params(&p)?;
                        self.$field = p;
                    } )*
                }
                Ok(())
            }
        }

        /// Binds `$b` to the backend of `$kind` built from `$params`
        /// (a [`BackendParams`](crate::contact::BackendParams)) and evaluates `$body`: the one `match` over
        /// the backends.
        /// What a rollout carries from one step to the next: the workspace
        /// of the backend it runs ([`ContactBackend::Workspace`]); empty
        /// until the first step.
        // One per rollout, created once and then reused in place (never
        // moved in a loop): boxing the large variant would only add an
        // indirection to every step.
        #[allow(clippy::large_enum_variant)]
        #[derive(Clone, Debug, Default)]
        pub enum Workspace<T: $crate::Scalar> {
            /// No step taken yet.
            #[default]
            Empty,
            $( $(#[$doc])* $Variant(<$crate::contact::$field::$Type as ContactBackend>::Workspace<T>), )*
        }

        macro_rules! with_backend_workspace {
            ($d kind:expr, $d params:expr, $d ws:expr, |$d b:ident, $d w:ident| $d body:expr) => {
                match $d kind {
                    $( $crate::contact::SolverKind::$Variant => {
                        let $d b = <$crate::contact::$field::$Type as $crate::contact::ContactBackend>::new(&($d params).$field);
                        let ws: &mut $crate::contact::Workspace<_> = $d ws;
                        if !matches!(ws, $crate::contact::Workspace::$Variant(_)) {
                            *ws = $crate::contact::Workspace::$Variant(Default::default());
                        }
                        let $crate::contact::Workspace::$Variant($d w) = ws else {
                            unreachable!("set above")
                        };
                        $d body
                    } )*
                }
            };
        }
        pub(crate) use with_backend_workspace;

        macro_rules! with_backend {
            ($d kind:expr, $d params:expr, |$d b:ident| $d body:expr) => {
                match $d kind {
                    $( $crate::contact::SolverKind::$Variant => {
                        let $d b = <$crate::contact::$field::$Type as $crate::contact::ContactBackend>::new(&($d params).$field);
                        $d body
                    } )*
                }
            };
        }
        pub(crate) use with_backend;

        // Each registry name is the backend's own `NAME` (checked when
        // compiling).
        $( const _: () = assert!(
            str_eq(stringify!($field), <$crate::contact::$field::$Type as ContactBackend>::NAME),
            concat!("registry name `", stringify!($field), "` differs from the backend's NAME")
        ); )*
    };
}

pub(crate) use backends;

/// `a == b` at compile time.
pub(crate) const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A backend name that is not in this build.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", if *planned { format!("the `{name}` backend is not in this build") } else { format!("unknown backend `{name}`") })]
pub struct UnknownBackend {
    /// The name asked for.
    pub name: String,
    /// A planned backend (named in the documentation, not yet built).
    pub planned: bool,
}

use dualsim::kernel;

fn helper<T: dualsim::Scalar>(x: T) -> T {
    x * x
}

// `inline` needs the callee's source, which only a kernel provides.
#[kernel(inline)]
fn uses_helper<T: dualsim::Scalar>(x: T) -> T {
    helper(x) + x
}

fn main() {}

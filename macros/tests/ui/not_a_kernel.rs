use dualsim::kernel;

fn helper<T: dualsim::Scalar>(x: T) -> T {
    x * x
}

#[kernel]
fn uses_helper<T: dualsim::Scalar>(x: T) -> T {
    helper(x) + x
}

fn main() {}

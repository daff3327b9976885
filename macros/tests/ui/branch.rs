use dualsim::kernel;

#[kernel]
fn relu<T: dualsim::Scalar>(x: T) -> T {
    if x.re() > 0.0 { x } else { x * 0.0 }
}

fn main() {}

use dualsim::kernel;

#[kernel]
fn pick<T: dualsim::Scalar>(x: [T; 3], i: T) -> T {
    x[i] * 2.0
}

fn main() {}

use dualsim::kernel;

#[kernel]
fn double<T: dualsim::Scalar>(x: [T; 2]) -> [T; 2] {
    [x[0] * 2, x[1] * 2]
}

#[kernel]
fn wrong<T: dualsim::Scalar>(x: [T; 2]) -> T {
    double(x) + x[0]
}

fn main() {}

use dualsim::kernel;

#[kernel]
fn double<T: dualsim::Scalar>(x: [T; 2]) -> [T; 2] {
    [x[0] * 2, x[1] * 2]
}

#[kernel]
fn unannotated<T: dualsim::Scalar>(x: [T; 2]) -> T {
    let y = double(x);
    y[0] + y[1]
}

fn main() {}

use dualsim::kernel;

#[kernel]
fn cross<T: dualsim::Scalar>(a: [T; 3], b: [T; 3]) -> [T; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2]]
}

fn main() {}

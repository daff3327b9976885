use dualsim::kernel;

#[kernel]
fn sum<T: dualsim::Scalar>(x: [T; 3]) -> T {
    for i in 0..3 {
        let y = x[i];
    }
    x[0]
}

fn main() {}

//! The AFL++ harness: `blindjoin-fuzz-afl TARGET` runs the target named TARGET
//! (`blindjoin_fuzz::TARGETS`) on the inputs afl-fuzz gives it, in persistent mode. A panic
//! aborts (a crash for AFL), and so does an allocation above `blindjoin_fuzz::alloc::CAP`.

use blindjoin_fuzz::alloc::CappedAlloc;

#[global_allocator]
static ALLOC: CappedAlloc = CappedAlloc;

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    let Some(target) = blindjoin_fuzz::target(&name) else {
        let names: Vec<&str> = blindjoin_fuzz::TARGETS.iter().map(|t| t.name).collect();
        eprintln!("usage: blindjoin-fuzz-afl TARGET, one of: {}", names.join(" "));
        std::process::exit(2);
    };
    afl::fuzz!(|data: &[u8]| {
        let _ = (target.run)(data);
    });
}

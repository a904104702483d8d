//! A directed check beside the fuzz targets (whose fake peers announce at most 21 items): what
//! each protocol's party does when the peer's hello announces a large set and the peer then
//! sends nothing. `cargo run --profile fuzz -p blindjoin-fuzz --example announced_size --
//! [N [PROTOCOL]]` (N default 10^8) prints each run's result and time; run it under
//! `/usr/bin/time -v` for the peak memory. A party should wait for the peer's first message
//! before it allocates in proportion to the peer's size (see docs/FUZZING.md).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use blindjoin_core::channel::memory::memory_pair;
use blindjoin_core::channel::{FrameReceiver, FrameSender};
use blindjoin_core::handshake::{Role, handshake};
use blindjoin_core::item::items_from_records;
use blindjoin_psi::protocols::ALL;
use blindjoin_psi::{BaseOt, RunOptions};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::time::{Duration, Instant};

fn main() {
    let n_peer: u64 = std::env::args()
        .nth(1)
        .map_or(100_000_000, |s| s.parse().unwrap());
    let only = std::env::args().nth(2);
    let opts = RunOptions {
        base_ot: BaseOt::Ideal,
        ..RunOptions::default()
    };
    let items = items_from_records(&["a", "b", "c"]);
    for p in ALL
        .iter()
        .filter(|p| only.as_deref().is_none_or(|o| o == p.name))
    {
        for we_receive in [true, false] {
            let peer_role = if we_receive {
                Role::Sender
            } else {
                Role::Receiver
            };
            let mut peer_cfg = opts.session_config(p.name, peer_role, 0, (p.params)(&opts));
            peer_cfg.set_size = n_peer;
            let (mut ours, mut peer) = memory_pair(Duration::from_secs(5));
            let start = Instant::now();
            let result = std::thread::scope(|s| {
                let h = s.spawn(move || {
                    let r = handshake(&mut peer, &peer_cfg, &mut ChaCha20Rng::seed_from_u64(2));
                    // Nothing after the handshake: close, and drain what the party sends.
                    peer.close();
                    while peer.recv("the party's frames", 1 << 26).is_ok() {}
                    r.map(|_| ())
                });
                let mut rng = ChaCha20Rng::seed_from_u64(1);
                let r = if we_receive {
                    p.receive(&mut ours, &items, &opts, &mut rng).map(|_| ())
                } else {
                    p.send(&mut ours, &items, &opts, &mut rng).map(|_| ())
                };
                drop(ours);
                let _ = h.join();
                r
            });
            let role = if we_receive { "receiver" } else { "sender" };
            println!(
                "{} {role}, peer announces {n_peer}: {:?} after {:?}",
                p.name,
                result.map_err(|e| e.to_string()),
                start.elapsed()
            );
        }
    }
}

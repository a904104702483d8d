//! Every extension type, every batch of sender outputs and the PRG that holds a base-OT key
//! wipe their secrets when dropped (`ZeroizeOnDrop`, checked at compile time), and their
//! `Debug` output shows no key material.

use blindjoin_core::prg::AesPrg;
use blindjoin_ot::base::ideal::{IdealBaseOtReceiver, IdealBaseOtSender};
use blindjoin_ot::ext::iknp::{IknpReceiver, IknpSender};
use blindjoin_ot::ext::kk13::{Kk13Receiver, Kk13Sender, Kk13SenderOutputs};
use blindjoin_ot::ext::kkrt::{KkrtReceiver, KkrtSender, KkrtSenderOutputs};
use blindjoin_ot::ext::kos::{KosReceiver, KosSender};
use blindjoin_testkit::{rng, run_two_party};

fn assert_zod<T: zeroize::ZeroizeOnDrop>() {}

#[test]
fn secrets_zeroize_on_drop() {
    assert_zod::<IknpSender>();
    assert_zod::<IknpReceiver>();
    assert_zod::<KosSender>();
    assert_zod::<KosReceiver>();
    assert_zod::<Kk13Sender>();
    assert_zod::<Kk13Receiver>();
    assert_zod::<Kk13SenderOutputs>();
    assert_zod::<KkrtSender>();
    assert_zod::<KkrtReceiver>();
    assert_zod::<KkrtSenderOutputs>();
    assert_zod::<AesPrg>();
}

#[test]
fn debug_shows_no_key_material() {
    let sid = [3u8; 32];
    let (recv, send) = run_two_party(
        |ch| {
            let iknp =
                IknpReceiver::setup(&mut IdealBaseOtSender::default(), ch, &sid, &mut rng(1))
                    .unwrap();
            let kos = KosReceiver::setup(&mut IdealBaseOtSender::default(), ch, &sid, &mut rng(2))
                .unwrap();
            let kk13 =
                Kk13Receiver::setup(&mut IdealBaseOtSender::default(), 8, ch, &sid, &mut rng(3))
                    .unwrap();
            let mut kkrt =
                KkrtReceiver::setup(&mut IdealBaseOtSender::default(), 4, ch, &sid, &mut rng(4))
                    .unwrap();
            let mut out = [blindjoin_core::Block::ZERO; 3];
            kkrt.receive(ch, &out.clone(), &mut out).unwrap();
            [
                format!("{iknp:?}"),
                format!("{kos:?}"),
                format!("{kk13:?}"),
                format!("{kkrt:?}"),
            ]
        },
        |ch| {
            let iknp =
                IknpSender::setup(&mut IdealBaseOtReceiver::default(), ch, &sid, &mut rng(5))
                    .unwrap();
            let kos = KosSender::setup(&mut IdealBaseOtReceiver::default(), ch, &sid, &mut rng(6))
                .unwrap();
            let kk13 = Kk13Sender::setup(
                &mut IdealBaseOtReceiver::default(),
                8,
                ch,
                &sid,
                &mut rng(7),
            )
            .unwrap();
            let mut kkrt = KkrtSender::setup(
                &mut IdealBaseOtReceiver::default(),
                4,
                ch,
                &sid,
                &mut rng(8),
            )
            .unwrap();
            let keys = kkrt.send(ch, 3).unwrap();
            [
                format!("{iknp:?}"),
                format!("{kos:?}"),
                format!("{kk13:?}"),
                format!("{kkrt:?}"),
                format!("{keys:?}"),
            ]
        },
    );
    assert_eq!(
        recv,
        [
            "IknpReceiver { .. }",
            "KosReceiver { .. }",
            "Kk13Receiver { eta: 8, .. }",
            "KkrtReceiver { width: 4, .. }",
        ]
    );
    assert_eq!(
        send,
        [
            "IknpSender { .. }",
            "KosSender { .. }",
            "Kk13Sender { eta: 8, .. }",
            "KkrtSender { width: 4, .. }",
            "KkrtSenderOutputs { width: 4, first: 0, len: 3, .. }",
        ]
    );
    assert_eq!(
        format!("{:?}", AesPrg::new(blindjoin_core::Block(7))),
        "AesPrg { .. }"
    );
}

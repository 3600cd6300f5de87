//! The arguments of the bench binaries' callgrind mode, `--only CASE --iters N`, which
//! `benches/instructions.sh` passes to `tables` and `middleware`.

/// The case `--only` names, if there is one.
pub fn only(args: &[String]) -> Option<&str> {
    let i = args.iter().position(|a| a == "--only")?;
    Some(args.get(i + 1).expect("--only CASE"))
}

/// How many calls `--iters` asks for (1 without it).
pub fn iters(args: &[String]) -> u64 {
    args.iter()
        .position(|a| a == "--iters")
        .and_then(|j| args.get(j + 1))
        .map(|n| n.parse().expect("--iters N"))
        .unwrap_or(1)
}

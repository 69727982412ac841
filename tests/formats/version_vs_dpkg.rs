//! Our version ordering against the real `dpkg --compare-versions`, over pseudo-random pairs
//! built to hit the hard cases: epochs, `~`, `+`, `.`, letters, revisions, leading zeros and
//! digit runs longer than any machine integer.

use std::cmp::Ordering;
use std::io::Write;
use std::process::{Command, Stdio};

use rocm_pin_core::deb::version::{compare, Version};

/// xorshift64*: deterministic, so a failure reproduces exactly.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

fn digits(rng: &mut Rng) -> String {
    match rng.below(8) {
        0 => "0".repeat(1 + rng.below(3)) + &rng.below(10).to_string(),
        1 => (0..(18 + rng.below(12)))
            .map(|_| char::from(b'0' + rng.below(10) as u8))
            .collect(),
        _ => {
            let bound = if rng.below(2) == 0 { 10 } else { 1000 };
            rng.below(bound).to_string()
        }
    }
}

/// A fragment made of a digit run followed by a separator or letters.
fn fragment(rng: &mut Rng, seps: &[&str]) -> String {
    let mut s = digits(rng);
    if rng.below(4) == 0 {
        s.push_str(rng.pick(&["a", "b", "rc", "Z", "alpha", "git"]));
    }
    s.push_str(rng.pick(seps));
    s
}

fn random_version(rng: &mut Rng) -> String {
    let mut s = String::new();
    if rng.below(5) == 0 {
        s.push_str(&format!("{}:", rng.pick(&["0", "1", "2", "10", "00"])));
    }
    let seps = [".", ".", ".", "+", "~", "", "~~", "+dfsg", "~rc"];
    s.push_str(&digits(rng));
    for _ in 0..rng.below(4) {
        s.push_str(rng.pick(&seps));
        s.push_str(&fragment(rng, &[""]));
    }
    if rng.below(4) == 0 {
        s.push_str(rng.pick(&["~", "+", ".", "a", "~~", "+b1", "~24.04"]));
    }
    if rng.below(2) == 0 {
        s.push('-');
        s.push_str(&digits(rng));
        for _ in 0..rng.below(3) {
            s.push_str(rng.pick(&[".", "+", "~", "ubuntu", "~24.04", "build"]));
            s.push_str(&digits(rng));
        }
    }
    s
}

/// Near-miss of `v`: one small edit, so equal and adjacent versions are frequent.
fn mutate(rng: &mut Rng, v: &str) -> String {
    let mut s = v.to_string();
    match rng.below(7) {
        0 => s.push('~'),
        1 => s.push_str("+0"),
        2 => {
            if let Some(i) = s.find(|c: char| c.is_ascii_digit()) {
                s.insert(i, '0'); // leading zero: often equal
            }
        }
        3 => s = format!("1:{s}"),
        4 => s.push_str(".0"),
        5 if !s.contains('-') => s.push_str("-0"),
        _ => {}
    }
    s
}

fn dpkg_orders(pairs: &[(String, String)]) -> Vec<Ordering> {
    // Two shells (the machine has 2 CPUs), each running its half of the comparisons: one dpkg
    // fork per question, at most two questions per pair, no per-pair shell start.
    let half = pairs.len().div_ceil(2);
    let workers: Vec<_> = pairs
        .chunks(half)
        .map(|chunk| {
            let input: String = chunk.iter().map(|(a, b)| format!("{a} {b}\n")).collect();
            std::thread::spawn(move || dpkg_batch(&input))
        })
        .collect();
    let answers: Vec<Ordering> = workers
        .into_iter()
        .flat_map(|w| w.join().expect("dpkg worker"))
        .collect();
    assert_eq!(answers.len(), pairs.len(), "dpkg answered every pair");
    answers
}

fn dpkg_batch(input: &str) -> Vec<Ordering> {
    // rc 0 = true, 1 = false, anything else (or any stderr, e.g. a bad-syntax warning) = the
    // pair is not a clean comparison and the test fails.
    let script = "while IFS=' ' read -r a b; do\n  \
         dpkg --compare-versions \"$a\" lt \"$b\"; r=$?\n  \
         if [ $r -eq 0 ]; then echo lt; continue; fi\n  \
         if [ $r -ne 1 ]; then echo \"error $r\"; continue; fi\n  \
         dpkg --compare-versions \"$a\" gt \"$b\"; r=$?\n  \
         case $r in 0) echo gt;; 1) echo eq;; *) echo \"error $r\";; esac\ndone\n";
    let mut child = Command::new("bash")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash + dpkg are needed for this test");
    let mut stdin = child.stdin.take().expect("stdin");
    let bytes = input.as_bytes().to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&bytes));
    let out = child.wait_with_output().expect("dpkg batch");
    writer.join().expect("writer thread").expect("write pairs");
    assert!(out.status.success(), "dpkg batch failed");
    assert!(
        out.stderr.is_empty(),
        "dpkg complained: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| match l {
            "lt" => Ordering::Less,
            "eq" => Ordering::Equal,
            "gt" => Ordering::Greater,
            other => panic!("dpkg could not compare a pair: {other}"),
        })
        .collect()
}

#[test]
fn agrees_with_dpkg_compare_versions() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut pairs = Vec::new();
    // Hand-picked hard cases first.
    for (a, b) in [
        ("1.0~rc1", "1.0"),
        ("1.0", "1.0-0"),
        ("1.0", "1.00"),
        ("1.0a", "1.0+"),
        ("1.0+", "1.0."),
        ("1.0~~a", "1.0~"),
        (
            "7.2.53211.70204-93~24.04",
            "7.2.53211.70204-93~24.04+pin1765000000.gabc1234",
        ),
        ("1.18.0.70204-93~24.04", "1.18.0.70204-94~24.04"),
        ("99999999999999999999999", "100000000000000000000000"),
        ("0000000000000000000000001", "1"),
        ("1:1.0", "0:2.0"),
    ] {
        pairs.push((a.to_string(), b.to_string()));
    }
    while pairs.len() < 1500 {
        let a = random_version(&mut rng);
        let b = if rng.below(3) == 0 {
            mutate(&mut rng, &a)
        } else {
            random_version(&mut rng)
        };
        pairs.push((a, b));
    }
    for (a, b) in &pairs {
        a.parse::<Version>()
            .unwrap_or_else(|e| panic!("generator made invalid {a}: {e}"));
        b.parse::<Version>()
            .unwrap_or_else(|e| panic!("generator made invalid {b}: {e}"));
    }
    let want = dpkg_orders(&pairs);
    let mut mismatches = Vec::new();
    let mut counts = [0usize; 3];
    for ((a, b), w) in pairs.iter().zip(&want) {
        counts[(*w as i8 + 1) as usize] += 1;
        let got = compare(a, b).expect("valid");
        if got != *w {
            mismatches.push(format!("{a} vs {b}: dpkg {w:?}, ours {got:?}"));
        }
    }
    eprintln!(
        "compared {} pairs with dpkg: {} lt, {} eq, {} gt; {} mismatches",
        pairs.len(),
        counts[0],
        counts[1],
        counts[2],
        mismatches.len()
    );
    assert!(
        counts.iter().all(|c| *c >= 50),
        "generator covers every outcome: {counts:?}"
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// Which strings are versions at all, and why not, against dpkg's own parser: every string we
/// accept dpkg accepts silently, every string we refuse dpkg refuses or warns about with the
/// same reason text.
#[test]
fn validity_agrees_with_dpkg() {
    let mut rng = Rng(0x0bad_5eed_0000_0002);
    let alphabet: Vec<char> = "0123456789012345678901234567890abcZ..::--++~~_!/%"
        .chars()
        .collect();
    let mut inputs: Vec<String> = vec![
        "1:".into(),
        "1.0-".into(),
        "a1".into(),
        "1:a".into(),
        "1.0_1".into(),
        "1.0-a:b".into(),
        "2147483648:1".into(),
        "2147483647:1".into(),
        "00:1".into(),
        "1:2:3".into(),
        "1--1".into(),
        ":1".into(),
        "1:-1".into(),
    ];
    while inputs.len() < 600 {
        let len = 1 + rng.below(10);
        let s: String = (0..len)
            .map(|_| alphabet[rng.below(alphabet.len())])
            .collect();
        if !s.starts_with('-') {
            // dpkg would read a leading '-' as an option.
            inputs.push(s);
        }
    }
    let script = "while IFS= read -r v; do\n  \
         out=$(dpkg --compare-versions \"$v\" eq \"$v\" 2>&1); r=$?\n  \
         printf '%s\\t%s\\n' \"$r\" \"$(printf '%s\\n' \"$out\" | head -n1)\"\ndone\n";
    let mut child = Command::new("bash")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("bash + dpkg");
    let mut stdin = child.stdin.take().expect("stdin");
    let input: String = inputs.iter().map(|s| format!("{s}\n")).collect();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("dpkg batch");
    writer.join().expect("writer").expect("write");
    let answers: Vec<String> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(answers.len(), inputs.len());
    let (mut valid, mut mismatches) = (0, Vec::new());
    for (input, answer) in inputs.iter().zip(&answers) {
        let (rc, message) = answer.split_once('\t').expect("rc<TAB>message");
        match input.parse::<Version>() {
            Ok(_) => {
                valid += 1;
                if rc != "0" || !message.is_empty() {
                    mismatches.push(format!("{input:?}: we accept, dpkg says rc {rc} {message}"));
                }
            }
            Err(e) => {
                if !message.contains(&format!("bad syntax: {}", e.reason)) {
                    mismatches.push(format!(
                        "{input:?}: we refuse ({}), dpkg says rc {rc} {message:?}",
                        e.reason
                    ));
                }
            }
        }
    }
    eprintln!(
        "validity: {} strings, {valid} valid, {} refused, {} mismatches",
        inputs.len(),
        inputs.len() - valid,
        mismatches.len()
    );
    assert!(
        valid >= 50 && inputs.len() - valid >= 50,
        "both outcomes covered"
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

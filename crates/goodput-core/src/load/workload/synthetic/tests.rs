use super::*;
use crate::request::protocol::tests::params;
use crate::request::protocol::Endpoint;

fn spec() -> SyntheticSpec {
    SyntheticSpec::new(LengthSpec::Fixed(100), LengthSpec::Fixed(7), 42)
}

fn tok() -> Tokenizer {
    Tokenizer::from_spec("tiktoken:o200k_base").unwrap()
}

fn prompt_of(r: &PreparedRequest) -> String {
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    v["prompt"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| v["messages"][0]["content"].as_str().unwrap().to_string())
}

#[test]
fn prompts_have_exact_token_counts() {
    let tok = tok();
    for n in [1u32, 3, 5, 6, 64, 1000, 4096] {
        let mut s = spec();
        s.input_tokens = LengthSpec::Fixed(n);
        let mut src = SyntheticSource::new(s, params(Endpoint::Completions), tok.clone(), 1);
        let r = src.next().unwrap().request;
        assert_eq!(r.prompt_tokens, Some(n.max(1)));
        assert_eq!(tok.count(&prompt_of(&r)), Some(n as usize), "{n}");
    }
}

#[test]
fn prompts_start_with_a_unique_salt_and_read_like_text() {
    let mut src = SyntheticSource::new(spec(), params(Endpoint::Completions), tok(), 99);
    let mut salts = std::collections::HashSet::new();
    for _ in 0..500 {
        let prompt = prompt_of(&src.next().unwrap().request);
        let salt: Vec<&str> = prompt.split(' ').take(SALT_WORDS).collect();
        assert!(salts.insert(salt.join(" ")), "salt repeated");
        let distinct: std::collections::HashSet<&str> = prompt.split(' ').collect();
        assert!(distinct.len() > 30, "{prompt}");
        assert!(prompt.contains('.'));
    }
}

/// The same seed reproduces lengths and body text; the salt differs
/// between runs (different nonces), so no prefix is shared across runs.
#[test]
fn same_seed_same_text_but_a_new_salt_each_run() {
    let mut s = spec();
    s.input_tokens = "uniform:20,400".parse().unwrap();
    s.output_tokens = "normal:50,10".parse().unwrap();
    let mut a = SyntheticSource::new(s.clone(), params(Endpoint::Chat), tok(), 1);
    let mut b = SyntheticSource::new(s.clone(), params(Endpoint::Chat), tok(), 2);
    let mut c = SyntheticSource::new(s, params(Endpoint::Chat), tok(), 1);
    for _ in 0..20 {
        let (ra, rb, rc) = (
            a.next().unwrap().request,
            b.next().unwrap().request,
            c.next().unwrap().request,
        );
        assert_eq!(ra.body, rc.body, "same nonce and seed: identical");
        assert_eq!(
            (ra.prompt_tokens, ra.max_tokens),
            (rb.prompt_tokens, rb.max_tokens),
            "lengths are reproduced by the seed"
        );
        let (pa, pb) = (prompt_of(&ra), prompt_of(&rb));
        let wa: Vec<&str> = pa.split(' ').collect();
        let wb: Vec<&str> = pb.split(' ').collect();
        assert_ne!(
            wa[..SALT_WORDS],
            wb[..SALT_WORDS],
            "salt must differ between runs"
        );
        assert_eq!(
            wa[SALT_WORDS..],
            wb[SALT_WORDS..],
            "body text is reproduced by the seed"
        );
    }
}

fn grouped(groups: u32, choice: GroupChoice) -> SyntheticSpec {
    let mut s = spec();
    s.input_tokens = LengthSpec::Fixed(300);
    s.prefix = Some(PrefixSpec {
        tokens: 200,
        groups,
        choice,
    });
    s
}

/// Prompts of a group share their prefix token for token; the salt right
/// after it keeps the rest unique; the cacheable count is the prefix after
/// the group's first use.
#[test]
fn prefix_groups_share_exact_prefixes_and_count_what_is_cacheable() {
    let tok = tok();
    let mut src = SyntheticSource::new(
        grouped(4, GroupChoice::RoundRobin),
        params(Endpoint::Completions),
        tok.clone(),
        5,
    );
    let reqs: Vec<PreparedRequest> = (0..12).map(|_| src.next().unwrap().request).collect();
    for (i, r) in reqs.iter().enumerate() {
        let text = prompt_of(r);
        assert_eq!(
            tok.count(&text),
            Some(300),
            "the prefix counts toward the length"
        );
        let ids = tok.encode(&text).unwrap();
        let same_group = prompt_of(&reqs[i % 4]);
        let first = tok.encode(&same_group).unwrap();
        assert_eq!(
            ids[..200],
            first[..200],
            "request {i} shares its group's 200 tokens"
        );
        if i >= 4 {
            assert_ne!(
                ids[200..205],
                first[200..205],
                "{i}: a salt right after the prefix"
            );
        }
        assert_eq!(r.cacheable_tokens, if i < 4 { 0 } else { 200 }, "{i}");
    }
    let other = prompt_of(&reqs[1]);
    assert_ne!(
        tok.encode(&other).unwrap()[..200],
        tok.encode(&prompt_of(&reqs[0])).unwrap()[..200]
    );
    // Another run: the same groups' text, but its own nonce words first.
    let mut again = SyntheticSource::new(
        grouped(4, GroupChoice::RoundRobin),
        params(Endpoint::Completions),
        tok.clone(),
        6,
    );
    let p2 = prompt_of(&again.next().unwrap().request);
    let p1 = prompt_of(&reqs[0]);
    assert_ne!(
        p1.split(' ').take(2).collect::<Vec<_>>(),
        p2.split(' ').take(2).collect::<Vec<_>>()
    );
}

#[test]
fn zipf_groups_are_skewed_and_uniform_ones_are_not() {
    let count = |choice| {
        let mut src = SyntheticSource::new(
            grouped(10, choice),
            params(Endpoint::Completions),
            Tokenizer::from_spec("none").unwrap(),
            1,
        );
        let mut hist = [0u32; 10];
        for _ in 0..2000 {
            if let Some(g) = src.groups.as_mut() {
                hist[g.pick() as usize] += 1;
            }
        }
        let _ = src.next();
        hist
    };
    let z = count(GroupChoice::Zipf(1.2));
    assert!(z[0] > 4 * z[9], "{z:?}");
    let u = count(GroupChoice::Uniform);
    assert!(u.iter().all(|&c| (130..280).contains(&c)), "{u:?}");
    let r = count(GroupChoice::RoundRobin);
    assert!(r.iter().all(|&c| c == 200), "{r:?}");
}

#[test]
fn a_session_turn_resends_the_history_with_the_actual_response() {
    let mut s = spec();
    s.sessions = Some(SessionShape {
        turns: LengthSpec::Fixed(3),
        think_time: "250ms".parse().unwrap(),
    });
    s.input_tokens = LengthSpec::Fixed(20);
    let mut src = SyntheticSource::new(s, params(Endpoint::Chat), tok(), 5);
    let follow = src.follow_ups().unwrap();
    let first = src.next().unwrap().request;
    let rec = RequestRecord {
        output_text: " the answer".into(),
        ..Default::default()
    };
    let (second, think) = follow.next_turn(&first, &rec).unwrap();
    assert_eq!(think, Duration::from_millis(250));
    let v: serde_json::Value = serde_json::from_slice(&second.body).unwrap();
    let msgs = v["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[0]["content"], prompt_of(&first));
    assert_eq!(
        msgs[1],
        serde_json::json!({"role": "assistant", "content": " the answer"})
    );
    assert_eq!(second.prompt_tokens, Some(20 + 2 + 20));
    assert_eq!(second.cacheable_tokens, 20 + 2, "the history is cacheable");
    let t = second.session.as_ref().unwrap();
    assert_eq!((t.session_id, t.turn), (0, 1));
    let (third, _) = follow.next_turn(&second, &rec).unwrap();
    assert_eq!(third.session.as_ref().unwrap().turn, 2);
    assert!(
        follow.next_turn(&third, &rec).is_none(),
        "three turns, then the session ends"
    );
    let failed = RequestRecord {
        error: Some(crate::request::record::RequestError {
            kind: crate::request::record::ErrorKind::HttpStatus,
            message: "x".into(),
            retry_after: None,
        }),
        ..Default::default()
    };
    assert!(
        follow.next_turn(&first, &failed).is_none(),
        "a failed turn ends its session"
    );
}

/// Under the built-in encodings a prompt's count is the sum of its words'
/// costs, not an encoding of it: every prompt of many lengths, with and
/// without a shared prefix, encodes to exactly the count it carries.
#[test]
fn built_in_encodings_give_every_prompt_the_count_it_encodes_to() {
    for spec_name in ["tiktoken:o200k_base", "tiktoken:cl100k_base"] {
        let tok = Tokenizer::from_spec(spec_name).unwrap();
        for prefixed in [false, true] {
            let mut s = if prefixed {
                grouped(3, GroupChoice::RoundRobin)
            } else {
                spec()
            };
            s.input_tokens = LengthSpec::Uniform { min: 1, max: 400 };
            let mut src = SyntheticSource::new(s, params(Endpoint::Completions), tok.clone(), 11);
            for _ in 0..300 {
                let r = src.next().unwrap().request;
                let claimed = r.prompt_tokens.unwrap() as usize;
                assert_eq!(
                    tok.count(&prompt_of(&r)),
                    Some(claimed),
                    "{spec_name} prefixed {prefixed}"
                );
            }
        }
    }
}

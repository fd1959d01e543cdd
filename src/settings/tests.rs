use super::*;

#[test]
fn validation_normalizes_and_explains() {
    let ok = Settings {
        base_url: " http://127.0.0.1:8080/v1/ ".into(),
        ..Default::default()
    }
    .validated()
    .expect("valid");
    assert_eq!(ok.base_url, "http://127.0.0.1:8080/v1");
    let err = Settings {
        base_url: "localhost:11434".into(),
        ..Default::default()
    }
    .validated()
    .unwrap_err();
    assert!(err.0.contains("must start with http"), "{err}");
    let err = Settings {
        base_url: "http://exa mple.org/v1".into(),
        ..Default::default()
    }
    .validated()
    .unwrap_err();
    assert!(err.0.contains("no valid host"), "{err}");
    let err = Settings {
        token_budget: 5,
        ..Default::default()
    }
    .validated()
    .unwrap_err();
    assert!(err.0.contains("Token budget"), "{err}");
}

#[test]
fn version_1_records_migrate_into_a_profile() {
    let v1 = r#"{"version":1,"provider":"openai_compatible","base_url":"http://127.0.0.1:8080/v1","model":"m","api_key":"sk-1","stream":false,"token_budget":5000}"#;
    let s = Settings::decode(v1).expect("migrates");
    assert_eq!(s.version, SETTINGS_VERSION);
    assert_eq!(
        (s.base_url.as_str(), s.model.as_str(), s.api_key.as_str()),
        ("http://127.0.0.1:8080/v1", "m", "sk-1")
    );
    assert!(!s.stream);
    assert_eq!(s.token_budget, 5000);
    assert_eq!(s.context_window, 0);
    let profile = &s.profiles[&Provider::OpenaiCompatible];
    assert_eq!(profile.api_key, "sk-1");
    // A record without a version is a version-1 record.
    let unversioned = Settings::decode(r#"{"base_url":"http://x/v1"}"#).expect("migrates");
    assert_eq!(
        unversioned.profiles[&Provider::OpenaiCompatible].base_url,
        "http://x/v1"
    );
    // The current version decodes unchanged.
    let again = Settings::decode(&serde_json::to_string(&s).expect("ser")).expect("decodes");
    assert_eq!(again, s);
}

#[test]
fn newer_or_broken_records_are_not_guessed_at() {
    assert_eq!(
        Settings::decode(r#"{"version":99}"#),
        Err(SettingsError::NewerVersion(99))
    );
    assert!(matches!(
        Settings::decode("{not json"),
        Err(SettingsError::Corrupted(_))
    ));
    assert!(matches!(
        Settings::decode("[1]"),
        Err(SettingsError::Corrupted(_))
    ));
    assert!(matches!(
        Settings::decode(r#"{"version":2,"provider":"mystery"}"#),
        Err(SettingsError::Corrupted(_))
    ));
}

#[test]
fn profiles_remember_each_provider_and_builtin_needs_no_url() {
    let s = Settings {
        provider: Provider::Anthropic,
        base_url: "https://api.anthropic.com/v1/".into(),
        model: "claude-sonnet-4-5".into(),
        api_key: " sk-ant ".into(),
        ..Default::default()
    }
    .validated()
    .expect("valid");
    assert_eq!(s.profiles[&Provider::Anthropic].api_key, "sk-ant");
    let builtin = Settings {
        provider: Provider::ChromeBuiltin,
        base_url: String::new(),
        api_key: "should go".into(),
        profiles: s.profiles.clone(),
        ..Default::default()
    }
    .validated()
    .expect("valid without a URL");
    assert!(builtin.api_key.is_empty());
    assert_eq!(builtin.profiles[&Provider::Anthropic].api_key, "sk-ant");
    assert!(builtin.profiles.contains_key(&Provider::ChromeBuiltin));
}

#[test]
fn context_window_is_checked_and_sizes_the_run() {
    let err = Settings {
        context_window: 10,
        ..Default::default()
    }
    .validated()
    .unwrap_err();
    assert!(err.0.contains("Context window"), "{err}");
    let small = Settings {
        context_window: 2_048,
        ..Default::default()
    }
    .run_config(None);
    assert_eq!(small.max_output_tokens, 512);
    assert_eq!(small.page_excerpt_chars, 1_000);
    let large = Settings {
        model: "gpt-4o".into(),
        ..Default::default()
    }
    .run_config(Some(3));
    assert_eq!(
        large.max_output_tokens,
        RunConfig::default().max_output_tokens
    );
    assert_eq!(
        large.page_excerpt_chars,
        RunConfig::default().page_excerpt_chars
    );
    assert_eq!(large.max_steps, 3);
}

#[test]
fn web_search_is_off_by_default_and_old_records_keep_it_off() {
    let fresh = Settings::default();
    assert_eq!(fresh.search_provider, WebSearch::Off);
    assert_eq!(fresh.search_config(), None);
    let v2 = r#"{"version":2,"provider":"openai_compatible","base_url":"http://x/v1"}"#;
    let s = Settings::decode(v2).expect("decodes");
    assert_eq!(
        (s.search_provider, s.search_base_url.as_str()),
        (WebSearch::Off, "")
    );
    let wire = serde_json::to_value(&fresh).expect("ser");
    assert_eq!(wire["search_provider"], "off");
}

#[test]
fn the_search_offer_is_made_until_answered_and_its_answer_round_trips() {
    // A record from before the offer loads as never answered.
    let v2 = r#"{"version":2,"provider":"openai_compatible","base_url":"http://x/v1","search_provider":"off"}"#;
    let old = Settings::decode(v2).expect("decodes");
    assert!(!old.search_offered);
    assert!(old.offers_search());
    assert!(Settings::default().offers_search());
    let answered = Settings {
        search_offered: true,
        ..old.clone()
    }
    .validated()
    .expect("valid");
    assert!(!answered.offers_search());
    let wire = serde_json::to_string(&answered).expect("ser");
    assert!(wire.contains(r#""search_offered":true"#), "{wire}");
    assert_eq!(Settings::decode(&wire).expect("decodes"), answered);
    // Search already on: nothing to offer.
    let on = Settings {
        search_provider: WebSearch::Wikipedia,
        ..old
    };
    assert!(!on.offers_search());
}

#[test]
fn web_search_fields_are_normalized_and_explained() {
    let on = |provider, base: &str, key: &str| Settings {
        search_provider: provider,
        search_base_url: base.into(),
        search_api_key: key.into(),
        ..Default::default()
    };
    let ok = on(WebSearch::Searxng, " http://127.0.0.1:8888/ ", "")
        .validated()
        .expect("valid");
    assert_eq!(ok.search_base_url, "http://127.0.0.1:8888");
    let config = ok.search_config().expect("on");
    assert_eq!(config.provider, SearchProvider::Searxng);
    // Wikipedia needs nothing; an empty base URL is the provider's default.
    on(WebSearch::Wikipedia, "", "").validated().expect("valid");
    let err = |s: Settings| s.validated().unwrap_err().0;
    let e = err(on(WebSearch::Searxng, "", ""));
    assert!(
        e.contains("SearXNG needs the address") && e.contains("Search base URL"),
        "{e}"
    );
    let e = err(on(WebSearch::Brave, "", "  "));
    assert!(e.contains("Brave Search needs an API key"), "{e}");
    let e = err(on(WebSearch::Tavily, "", ""));
    assert!(e.contains("Search API key"), "{e}");
    let e = err(on(WebSearch::Wikipedia, "de.wikipedia.org", ""));
    assert!(
        e.starts_with("Search base URL") && e.contains("http://"),
        "{e}"
    );
    // A malformed address is refused even while search is off.
    let e = err(on(WebSearch::Off, "http://[::1/w", ""));
    assert!(e.contains("no valid host"), "{e}");
    let e = err(on(WebSearch::Searxng, "http://me:pw@host", ""));
    assert!(e.contains("credentials"), "{e}");
    let e = err(on(WebSearch::Brave, "", "key\nmore"));
    assert!(e.contains("control characters"), "{e}");
    let kept = on(WebSearch::Brave, "", " BSA-1 ")
        .validated()
        .expect("valid");
    assert_eq!(kept.search_api_key, "BSA-1");
    // The key is kept with the settings but never shown by a config's Debug form.
    assert!(!format!("{:?}", kept.search_config()).contains("BSA-1"));
}

#[test]
fn an_unknown_search_provider_is_not_guessed_at() {
    assert!(matches!(
        Settings::decode(r#"{"version":2,"search_provider":"bing"}"#),
        Err(SettingsError::Corrupted(_))
    ));
}

#[test]
fn version_2_records_get_a_finite_answer_timeout() {
    let v2 = |timeout: &str| {
        let field = if timeout.is_empty() {
            String::new()
        } else {
            format!(r#","input_answer_timeout_secs":{timeout}"#)
        };
        Settings::decode(&format!(
            r#"{{"version":2,"provider":"openai_compatible","base_url":"http://x/v1"{field}}}"#
        ))
    };
    let secs = |timeout: &str| v2(timeout).expect("migrates").input_answer_timeout_secs;
    // 0 meant "no limit": it becomes the default, 30 minutes.
    assert_eq!(secs("0"), 1_800);
    assert_eq!(secs(""), 1_800);
    assert_eq!(secs("null"), 1_800);
    // Any other value is kept, brought into 60 s to one day.
    assert_eq!(secs("600"), 600);
    assert_eq!(secs("5"), 60);
    assert_eq!(secs("100000"), 86_400);
    assert_eq!(v2("0").expect("migrates").version, 3);
    // Not a number: refused, not guessed at.
    assert!(matches!(v2(r#""soon""#), Err(SettingsError::Corrupted(_))));
    // The default is 30 minutes, and the range is checked on save.
    assert_eq!(Settings::default().input_answer_timeout_secs, 1_800);
    for bad in [0, 59, 86_401] {
        let err = Settings {
            input_answer_timeout_secs: bad,
            ..Default::default()
        }
        .validated()
        .unwrap_err();
        assert!(err.0.contains("between 60 and 86400 seconds"), "{err}");
    }
    // A version-3 record never holds 0: one that does is invalid, and says why.
    let err = Settings::decode(r#"{"version":3,"input_answer_timeout_secs":0}"#).unwrap_err();
    assert!(
        matches!(&err, SettingsError::Invalid(why) if why.contains("wait for your answer")),
        "{err}"
    );
    // The run gets the timeout in milliseconds.
    let run = Settings::default().run_config(None);
    assert_eq!(run.input_answer_timeout_ms, 1_800_000);
}

#[test]
fn version_1_records_migrate_to_version_3() {
    let v1 = r#"{"version":1,"base_url":"http://127.0.0.1:8080/v1","model":"m","input_answer_timeout_secs":0}"#;
    let s = Settings::decode(v1).expect("migrates");
    assert_eq!(s.version, 3);
    assert_eq!(s.input_answer_timeout_secs, 1_800);
    assert_eq!(s.profiles[&Provider::OpenaiCompatible].model, "m");
    let kept = Settings::decode(r#"{"base_url":"http://x/v1","input_answer_timeout_secs":120}"#)
        .expect("migrates");
    assert_eq!(kept.input_answer_timeout_secs, 120);
}

#[test]
fn the_run_never_waits_without_limit() {
    // A run config from an older build may still say 0: it means the default, never forever.
    let old = RunConfig {
        input_answer_timeout_ms: 0,
        input_ack_timeout_ms: 0,
        ..RunConfig::default()
    };
    assert_eq!(old.answer_wait_ms(), 1_800_000);
    assert_eq!(old.ack_wait_ms(), 300_000);
    let huge = RunConfig {
        input_answer_timeout_ms: u64::MAX,
        input_ack_timeout_ms: u64::MAX,
        ..RunConfig::default()
    };
    assert_eq!(huge.answer_wait_ms(), 86_400_000);
    assert_eq!(huge.ack_wait_ms(), 86_400_000);
    assert_eq!(old.sanitized().input_answer_timeout_ms, 1_800_000);
}

#[test]
fn the_model_call_deadline_defaults_to_5_minutes_and_keeps_its_bounds() {
    assert_eq!(Settings::default().model_deadline_secs, 300);
    // A record written before the setting existed reads as the default.
    let old =
        r#"{"version":2,"provider":"openai_compatible","base_url":"http://127.0.0.1:8080/v1"}"#;
    assert_eq!(
        Settings::decode(old).expect("decodes").model_deadline_secs,
        300
    );
    for ok in [10, 300, 3_600] {
        let s = Settings {
            model_deadline_secs: ok,
            ..Default::default()
        };
        assert_eq!(s.validated().expect("valid").model_deadline_secs, ok);
    }
    for bad in [0, 9, 3_601] {
        let err = Settings {
            model_deadline_secs: bad,
            ..Default::default()
        }
        .validated()
        .unwrap_err();
        assert_eq!(
            err.0,
            format!("Model call deadline must be between 10 and 3,600 seconds (got {bad}).")
        );
    }
}

use super::*;

fn ollama() -> ProviderConfig {
    ProviderConfig {
        provider: Provider::Ollama,
        base_url: "http://localhost:11434".into(),
        model: "llama3.2".into(),
        ..Default::default()
    }
}

#[test]
fn ollama_403_without_body_explains_origins_for_every_os() {
    let err = http_error(
        &ollama(),
        "http://localhost:11434/api/chat",
        403,
        LlmErrorKind::Auth,
        None,
    );
    assert!(err.message.contains("OLLAMA_ORIGINS"), "{}", err.message);
    let ctx = DoctorContext {
        extension_origin: "chrome-extension://abc".into(),
        ..Default::default()
    };
    let d = diagnose(&ollama(), &err, &ctx);
    assert_eq!(d.problem, Problem::OllamaOrigin);
    let all = d.steps.join("\n");
    for needle in [
        "systemctl",
        "launchctl setenv OLLAMA_ORIGINS \"chrome-extension://abc\"",
        "setx OLLAMA_ORIGINS",
        "OLLAMA_ORIGINS=chrome-extension://abc ollama serve",
    ] {
        assert!(all.contains(needle), "missing {needle} in {all}");
    }
}

#[test]
fn ollama_403_says_what_the_origin_rule_already_did_and_what_remains() {
    let err =
        |config: &ProviderConfig| http_error(config, "/api/chat", 403, LlmErrorKind::Auth, None);
    let ctx = |rule| DoctorContext {
        extension_origin: "chrome-extension://abc".into(),
        origin_rule: rule,
        ..Default::default()
    };
    // On this computer, the rule in place: something else checks the origin.
    let local = ollama();
    assert!(err(&local)
        .message
        .contains("without the extension's origin"));
    let d = diagnose(&local, &err(&local), &ctx(Some(true)));
    assert!(
        d.summary.contains(
            "already sends its requests to http://localhost:11434 without the extension's origin"
        ),
        "{}",
        d.summary
    );
    // Chrome refused the rule.
    let d = diagnose(&local, &err(&local), &ctx(Some(false)));
    assert!(
        d.summary.contains("Chrome did not accept the rule"),
        "{}",
        d.summary
    );
    assert!(d
        .steps
        .join("\n")
        .contains("OLLAMA_ORIGINS=chrome-extension://abc ollama serve"));
    // Another computer: no rule applies there.
    let remote = ProviderConfig {
        base_url: "http://192.168.1.20:11434".into(),
        ..ollama()
    };
    assert!(err(&remote)
        .message
        .contains("only from requests to this computer"));
    let d = diagnose(&remote, &err(&remote), &ctx(None));
    assert!(
        d.summary.contains("this server is on another one"),
        "{}",
        d.summary
    );
    assert_eq!(d.steps[0], "On the computer that runs Ollama:");
}

#[test]
fn a_refused_connection_names_the_port_and_a_missing_permission_offers_the_button() {
    let err = network_error(&ollama(), "Failed to fetch");
    let d = diagnose(
        &ollama(),
        &err,
        &DoctorContext {
            host_permission: Some(true),
            ..Default::default()
        },
    );
    assert_eq!(d.problem, Problem::Unreachable);
    assert!(
        d.steps.iter().any(|s| s.contains("port 11434")),
        "{:?}",
        d.steps
    );
    assert!(d.steps.iter().any(|s| s.contains("ollama serve")));
    let remote = ProviderConfig::openai("https://llm.example.com/v1", "m", "");
    let d = diagnose(
        &remote,
        &network_error(&remote, "Failed to fetch"),
        &DoctorContext {
            host_permission: Some(false),
            ..Default::default()
        },
    );
    assert_eq!(d.problem, Problem::HostPermission);
    assert_eq!(
        d.permission_origin.as_deref(),
        Some("https://llm.example.com/*")
    );
}

#[test]
fn a_404_with_a_model_list_suggests_the_nearest_names() {
    let config = ProviderConfig {
        model: "llama3".into(),
        ..ollama()
    };
    let err = http_error(
        &config,
        "x",
        404,
        LlmErrorKind::NotFound,
        Some("model \"llama3\" not found, try pulling it first".into()),
    );
    let models = vec![
        "llama3.2:latest".to_string(),
        "qwen2.5:7b".into(),
        "mistral:latest".into(),
    ];
    let d = diagnose(
        &config,
        &err,
        &DoctorContext {
            models: Some(models),
            ..Default::default()
        },
    );
    assert_eq!(d.problem, Problem::NotFound);
    assert_eq!(d.suggestions, vec!["llama3.2:latest".to_string()]);
    assert!(d.steps[0].contains("\"llama3.2:latest\""), "{:?}", d.steps);
    let d = diagnose(&config, &err, &DoctorContext::default());
    assert!(d.steps[0].contains("server's root"), "{:?}", d.steps);
}

#[test]
fn auth_errors_point_at_the_key_and_where_to_get_one() {
    let config = ProviderConfig {
        provider: Provider::Anthropic,
        base_url: "https://api.anthropic.com/v1".into(),
        model: "claude".into(),
        api_key: "bad".into(),
        ..Default::default()
    };
    let err = http_error(
        &config,
        "x",
        401,
        LlmErrorKind::Auth,
        Some("invalid x-api-key".into()),
    );
    assert!(
        err.message.contains("API key was rejected"),
        "{}",
        err.message
    );
    let d = diagnose(&config, &err, &DoctorContext::default());
    assert_eq!(d.problem, Problem::Auth);
    assert!(d.steps[0].contains("console.anthropic.com"));
    assert_eq!(d.detail.as_deref(), Some("invalid x-api-key"));
}

#[test]
fn missing_settings_are_config_errors() {
    let mut c = ollama();
    c.model.clear();
    assert!(config_error(&c, true)
        .expect("error")
        .message
        .contains("llama3.2"));
    assert!(config_error(&c, false).is_none());
    let gemini = ProviderConfig {
        provider: Provider::Gemini,
        base_url: Provider::Gemini.default_base_url().into(),
        model: "gemini-2.5-flash".into(),
        ..Default::default()
    };
    assert!(config_error(&gemini, true)
        .expect("error")
        .message
        .contains("API key"));
}

#[test]
fn builtin_unavailability_lists_the_requirement_the_api_reported() {
    let config = ProviderConfig {
        provider: Provider::ChromeBuiltin,
        ..Default::default()
    };
    for (availability, needle) in [
        ("no_api", "Chrome 138"),
        ("unavailable", "22 GB"),
        ("downloadable", "downloads the model"),
        ("downloading", "on-device-internals"),
    ] {
        let d = diagnose(
            &config,
            &builtin_unavailable(Availability::from_api(availability)),
            &DoctorContext::default(),
        );
        assert_eq!(d.problem, Problem::BuiltinUnavailable);
        assert!(
            d.steps.join(" ").contains(needle),
            "{availability}: {:?}",
            d.steps
        );
    }
}

#[test]
fn nearest_models_prefers_containment_then_distance() {
    let models: Vec<String> = ["gpt-4o", "gpt-4o-mini", "o3-mini", "text-embedding-3-small"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(nearest_models("gpt4o", &models)[0], "gpt-4o");
    assert_eq!(nearest_models("gpt-4o-min", &models)[0], "gpt-4o-mini");
    assert!(nearest_models("zzzzzzzzzzzzzzzzzzzz-unrelated", &models).is_empty());
}

#[test]
fn hostile_replies_are_diagnosed_as_what_they_are_not_as_unreachable() {
    use crate::llm::transport::bounds;
    let config = ProviderConfig::openai("http://127.0.0.1:8080/v1", "m", "");
    let ctx = DoctorContext::default();
    // An HTML page answering 200: the Base URL, not a missing field.
    let d = diagnose(
        &config,
        &bounds::wrong_format(&config, "an HTML page"),
        &ctx,
    );
    assert_eq!(d.problem, Problem::Config);
    assert!(
        d.summary.contains("answered with an HTML page"),
        "{}",
        d.summary
    );
    assert!(d.steps[0].starts_with("Set the Base URL"), "{:?}", d.steps);
    // Past the deadline: a timeout whose remedy is the setting.
    let d = diagnose(&config, &bounds::deadline(&config, 10_000), &ctx);
    assert_eq!(d.problem, Problem::Timeout);
    assert!(
        d.steps[0].contains("\"Model call deadline\""),
        "{:?}",
        d.steps
    );
    // A stream cut off: the server broke off, it did answer.
    let d = diagnose(&config, &bounds::cut_off(&config, "`[DONE]`"), &ctx);
    assert_eq!(d.problem, Problem::Server);
    assert!(d.summary.contains("was cut off"), "{}", d.summary);
}

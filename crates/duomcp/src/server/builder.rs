//! [`ServerBuilder`]'s methods: the server's identity and settings, its tools, prompts,
//! resources, state, tasks, skills and middleware, and the checks of `build`.

use super::*;

impl ServerBuilder {
    /// The server's name (`serverInfo.name`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.info.name = name.into();
        self
    }

    /// The server's version (`serverInfo.version`).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.info.version = version.into();
        self
    }

    /// The whole `serverInfo` (title, icons, website…).
    pub fn info(mut self, info: Implementation) -> Self {
        self.info = info;
        self
    }

    /// Instructions for the model on how to use this server.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Declares the extension `id` (SEP-2133: `com.example/name`) with its settings object, in
    /// the server's `capabilities.extensions`: in `initialize`'s result for 2025-11-25 clients,
    /// in `server/discover`'s for 2026-07-28 ones. Use it for an extension the application
    /// implements itself; the ones duomcp implements (tasks, skills, MCP Apps' `ui`) are declared
    /// when what they need is registered. Settings given here replace those duomcp would
    /// declare for the same `id`. A handler sees what the client declared in
    /// [`Context::client_capabilities`](crate::server::Context::client_capabilities)`().extensions`.
    ///
    /// An `id` that is not an extension identifier is refused by
    /// [`try_build`](Self::try_build) ([`BuildError::InvalidExtension`]).
    ///
    /// ```
    /// use duomcp::server::Server;
    /// use serde_json::json;
    /// let settings = json!({ "maxItems": 3 }).as_object().cloned().unwrap_or_default();
    /// let server = Server::builder()
    ///     .extension("com.example/inventory", settings)
    ///     .extension("com.example/empty", Default::default())
    ///     .build();
    /// # let _ = server;
    /// assert!(Server::builder().extension("inventory", Default::default()).try_build().is_err());
    /// ```
    pub fn extension(mut self, id: impl Into<String>, settings: JsonObject) -> Self {
        self.extensions
            .insert(id.into(), serde_json::Value::Object(settings));
        self
    }

    /// Limits, timeouts and cache policies.
    pub fn config(mut self, config: ServerConfig) -> Self {
        self.config = config;
        self
    }

    /// The key that seals `requestState`; replicas behind one load balancer must share it.
    /// Default: a random key per process.
    pub fn sealing_key(mut self, key: SealingKey) -> Self {
        self.sealing_key = Some(Keyring::from(key));
        self
    }

    /// The keys that seal (the newest) and open (all) `requestState`, for key rotation across
    /// replicas; see [`Keyring`]. The server keeps a clone: [`Keyring::replace`] on the one
    /// given here changes the server's keys while it runs.
    ///
    /// ```
    /// use duomcp::server::{Keyring, SealingKey, SealingKeyExt as _, Server};
    /// let ring = Keyring::new(SealingKey::random(), vec![SealingKey::random()]);
    /// let server = Server::builder().keyring(ring.clone()).build();
    /// assert_eq!(server.keyring().newest_id(), ring.newest_id());
    /// ```
    pub fn keyring(mut self, keys: Keyring) -> Self {
        self.sealing_key = Some(keys);
        self
    }

    /// Registers a named registry change (adding a tool, a prompt…), to be applied with
    /// [`Server::apply_change`] on every replica of a deployment: handlers are code, so what
    /// travels between replicas is the name and an argument, and each replica runs this
    /// `apply` (registered by every replica's program alike). See `Server::apply_change`.
    pub fn change(
        mut self,
        name: impl Into<String>,
        apply: impl Fn(&Server, &serde_json::Value) + Send + Sync + 'static,
    ) -> Self {
        self.changes.insert(name.into(), Arc::new(apply));
        self
    }

    /// Shared application state, available to handlers as [`State<T>`] or [`Context::state`].
    ///
    /// ```
    /// use duomcp::server::{Server, State};
    ///
    /// #[derive(Clone)]
    /// struct Greeting(&'static str);
    ///
    /// let server = Server::builder()
    ///     .state(Greeting("Hello"))
    ///     .tool("greet", |State(g): State<Greeting>| async move { format!("{}!", g.0) })
    ///     .build();
    /// # let _ = server;
    /// ```
    pub fn state<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.state.0.insert(TypeId::of::<T>(), Box::new(value));
        self
    }

    /// Registers a tool.
    ///
    /// ```
    /// use duomcp::server::{Args, Server, ToolSpec};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Add {
    ///     /// The first number.
    ///     a: i64,
    ///     /// The second number.
    ///     b: i64,
    /// }
    ///
    /// let server = Server::builder()
    ///     .tool(ToolSpec::new("add").description("Adds two numbers"), |Args(x): Args<Add>| async move {
    ///         (x.a + x.b).to_string()
    ///     })
    ///     .tool("ping", || async { "pong" }) // a name alone: no arguments
    ///     .build();
    /// # let _ = server;
    /// ```
    pub fn tool<H, T>(mut self, spec: impl Into<ToolSpec>, handler: H) -> Self
    where
        H: Handler<T>,
        H::Output: IntoToolResult,
    {
        let entry = registry::tool_entry(spec.into(), handler);
        self.need::<H, T>(format!("tool `{}`", entry.tool.name));
        self.registry
            .tools
            .insert(entry.tool.name.clone(), Arc::new(entry));
        self
    }

    /// Registers a prompt.
    ///
    /// ```
    /// use duomcp::server::{Args, Server};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Review {
    ///     /// The code to review.
    ///     code: String,
    /// }
    ///
    /// let server = Server::builder()
    ///     .prompt("review", |Args(r): Args<Review>| async move {
    ///         format!("Please review this code:\n\n{}", r.code)
    ///     })
    ///     .build();
    /// # let _ = server;
    /// ```
    pub fn prompt<H, T>(mut self, spec: impl Into<PromptSpec>, handler: H) -> Self
    where
        H: Handler<T>,
        H::Output: IntoPromptResult,
    {
        let entry = registry::prompt_entry(spec.into(), handler);
        self.need::<H, T>(format!("prompt `{}`", entry.prompt.name));
        self.registry
            .prompts
            .insert(entry.prompt.name.clone(), Arc::new(entry));
        self
    }

    /// Registers a resource with a fixed URI.
    ///
    /// ```
    /// use duomcp::schema::Resource;
    /// let server = duomcp::server::Server::builder()
    ///     .resource(Resource::new("memo://readme", "readme"), || async { "# Memo".to_owned() })
    ///     .build();
    /// # let _ = server;
    /// ```
    pub fn resource<H, T>(mut self, resource: impl Into<ResourceSpec>, handler: H) -> Self
    where
        H: Handler<T>,
        H::Output: IntoReadResult,
    {
        let entry = registry::resource_entry(resource.into(), handler);
        self.need::<H, T>(format!("resource `{}`", entry.resource.uri));
        self.registry
            .resources
            .insert(entry.resource.uri.clone(), Arc::new(entry));
        self
    }

    /// Registers a resource template (RFC 6570); its variables reach the handler as `Args<T>`.
    ///
    /// ```
    /// use duomcp::schema::ResourceTemplate;
    /// use duomcp::server::{Args, Server};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Note {
    ///     id: String,
    /// }
    ///
    /// let server = Server::builder()
    ///     .resource_template(ResourceTemplate::new("memo://notes/{id}", "note"), |Args(n): Args<Note>| async move {
    ///         format!("note {}", n.id)
    ///     })
    ///     .build();
    /// # let _ = server;
    /// ```
    pub fn resource_template<H, T>(mut self, template: impl Into<TemplateSpec>, handler: H) -> Self
    where
        H: Handler<T>,
        H::Output: IntoReadResult,
    {
        let entry = registry::template_entry(template.into(), handler);
        self.need::<H, T>(format!(
            "resource template `{}`",
            entry.template.uri_template
        ));
        self.registry.templates.push(Arc::new(entry));
        self
    }

    /// Answers `completion/complete` (argument autocompletion for prompts and templates).
    ///
    /// ```
    /// use duomcp::schema::CompleteResult;
    /// let server = duomcp::server::Server::builder()
    ///     .completion(|params, _ctx| async move {
    ///         let languages = ["en", "fr", "de"];
    ///         let typed = params.argument.value.clone();
    ///         let values = languages.iter().filter(|l| l.starts_with(&typed)).map(|l| l.to_string()).collect();
    ///         Ok(CompleteResult::new(values))
    ///     })
    ///     .build();
    /// # let _ = server;
    /// ```
    pub fn completion<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(CompleteRequestParams, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CompleteResult, HandlerError>> + Send + 'static,
    {
        self.registry.completion = Some(Arc::new(move |p, c| Box::pin(handler(p, c))));
        self
    }

    /// How tasks are stored, timed and retained (see [`tasks`]). Tools run as tasks when they
    /// allow it ([`ToolSpec::task_support`], [`ToolSpec::long_running`]).
    ///
    /// ```
    /// use duomcp::server::tasks::TaskConfig;
    /// use std::time::Duration;
    /// let server = duomcp::server::Server::builder()
    ///     .tasks(TaskConfig::default().default_ttl(Duration::from_secs(600)).poll_interval(Duration::from_secs(1)))
    ///     .tool(duomcp::server::ToolSpec::new("report").long_running(), || async { "done" })
    ///     .build();
    /// # let _ = server;
    /// ```
    pub fn tasks(mut self, config: tasks::TaskConfig) -> Self {
        self.tasks = config;
        self
    }

    /// Serves skills (extension `io.modelcontextprotocol/skills`, see [`skills`]): their files
    /// become `skill://` resources, and `skills/list`, `skills/get` and
    /// `resources/directory/read` answer. Declaring them also declares the `resources`
    /// capability (feature `skills`, on by default).
    ///
    /// ```
    /// use duomcp::server::{skills::{Skill, SkillSet}, Server};
    /// let skills = SkillSet::new()
    ///     .skill(Skill::new("greeting").file("SKILL.md", "---\nname: greeting\ndescription: Greet people\n---\nSay hi.\n"))
    ///     .expect("valid");
    /// let server = Server::builder().skills(skills).build();
    /// # let _ = server;
    /// ```
    #[cfg(feature = "skills")]
    pub fn skills(mut self, skills: skills::SkillSet) -> Self {
        self.skills = Some(skills);
        self
    }

    /// Declares an event type of the events extension (experimental, feature `events`; see
    /// [`events`]): the server then declares the `events` capability and
    /// answers `events/list`, `events/poll` and `events/stream`. Occurrences are emitted with
    /// [`Server::events`]. A type declared again replaces the earlier one.
    ///
    /// ```
    /// use duomcp::server::{events::{Delivery, EventType}, Server};
    /// let server = Server::builder()
    ///     .event(EventType::new("demo.tick").description("Every tick").delivery([Delivery::Poll]))
    ///     .build();
    /// assert!(server.events().is_enabled());
    /// ```
    #[cfg(feature = "events")]
    pub fn event(mut self, kind: super::events::EventType) -> Self {
        self.event_types.push(kind);
        self
    }

    /// The bounds and timings of the events extension (feature `events`): ring sizes, the
    /// heartbeat, the stream caps.
    ///
    /// ```
    /// use duomcp::server::{events::{EventType, EventsConfig}, Server};
    /// let mut config = EventsConfig::default();
    /// config.max_streams_per_caller = 4;
    /// let server = Server::builder().event(EventType::new("x")).events_config(config).build();
    /// # let _ = server;
    /// ```
    #[cfg(feature = "events")]
    pub fn events_config(mut self, config: super::events::EventsConfig) -> Self {
        self.events_config = config;
        self
    }

    /// Webhook delivery for the events extension (feature `webhooks`): `events/subscribe` and
    /// `events/unsubscribe`, and `"webhook"` among the delivery modes of the event types that
    /// offer it (all, unless [`EventType::delivery`] leaves it out). Without this call the
    /// server offers no webhooks.
    ///
    /// ```
    /// use duomcp::server::events::{webhook::WebhookConfig, EventType};
    /// use duomcp::server::Server;
    /// use std::time::Duration;
    ///
    /// let mut config = WebhookConfig::default();
    /// config.max_ttl = Duration::from_secs(2 * 3600);
    /// let server = Server::builder()
    ///     .event(EventType::new("order.created"))
    ///     .webhooks(config)
    ///     .build();
    /// # let _ = server;
    /// ```
    ///
    /// [`EventType::delivery`]: super::events::EventType::delivery
    #[cfg(feature = "webhooks")]
    pub fn webhooks(mut self, config: super::events::webhook::WebhookConfig) -> Self {
        self.webhooks = Some(config);
        self
    }

    /// Wraps every request in a [tower] layer (see [`middleware`]): authorization checks, rate
    /// limits, timeouts, metrics. It applies in both eras and on every transport. A layer
    /// added later wraps the ones added before it, so it sees the request first and the
    /// response last.
    ///
    /// ```
    /// use duomcp::server::middleware::{layer_fn, McpRequest, Service};
    /// use duomcp::server::Server;
    ///
    /// // Logs the method and target of every request, then passes it on.
    /// #[derive(Clone)]
    /// struct Log<S>(S);
    /// impl<S: Service<McpRequest>> Service<McpRequest> for Log<S> {
    ///     type Response = S::Response;
    ///     type Error = S::Error;
    ///     type Future = S::Future;
    ///     fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), S::Error>> {
    ///         self.0.poll_ready(cx)
    ///     }
    ///     fn call(&mut self, req: McpRequest) -> S::Future {
    ///         eprintln!("{} {:?}", req.method(), req.target());
    ///         self.0.call(req)
    ///     }
    /// }
    ///
    /// let server = Server::builder().tool("hi", || async { "hi" }).layer(layer_fn(Log)).build();
    /// # let _ = server;
    /// ```
    ///
    /// [tower]: https://docs.rs/tower
    pub fn layer<L>(mut self, layer: L) -> Self
    where
        L: middleware::Layer<middleware::McpService>,
        L::Service: middleware::Service<middleware::McpRequest, Response = middleware::McpResponse>
            + Clone
            + Send
            + 'static,
        <L::Service as middleware::Service<middleware::McpRequest>>::Error:
            Into<middleware::BoxError>,
        <L::Service as middleware::Service<middleware::McpRequest>>::Future: Send + 'static,
    {
        let inner = self
            .middleware
            .take()
            .unwrap_or_else(|| middleware::McpService::new(dispatch::Dispatcher));
        self.middleware = Some(middleware::McpService::new(layer.layer(inner)));
        self
    }

    /// Traces, measures and audits every request with `telemetry` (feature `otel`; see
    /// [`otel`](crate::otel)): a span per request by the MCP semantic conventions, parented on
    /// the trace context the client sent, the MCP metrics, and the audit log if it has one.
    ///
    /// ```
    /// use duomcp::otel::Pipeline;
    /// use duomcp::server::Server;
    /// let pipeline = Pipeline::from_env().expect("OTEL_* variables");
    /// let server = Server::builder().telemetry(pipeline.telemetry()).build();
    /// # let _ = server;
    /// ```
    #[cfg(feature = "otel")]
    pub fn telemetry(mut self, telemetry: crate::otel::Telemetry) -> Self {
        self.telemetry = telemetry::Slot(Some(telemetry));
        self
    }

    /// Records the `State<T>` arguments of a handler being registered.
    fn need<H: Handler<T>, T>(&mut self, handler: String) {
        // A handler registered again under the same name replaces the earlier one.
        self.needs.retain(|n| n.handler != handler);
        for (type_id, type_name) in H::required_states() {
            self.needs.push(StateNeed {
                type_id,
                type_name,
                handler: handler.clone(),
            });
        }
    }

    /// Finishes the definition, or says which handlers take a [`State<T>`] whose `T` was never
    /// registered with [`state`](ServerBuilder::state) (they would fail at every call).
    ///
    /// ```
    /// use duomcp::server::{BuildError, Server, State};
    /// #[derive(Clone)]
    /// struct Counter;
    /// async fn visits(State(_): State<Counter>) -> String { "1".into() }
    ///
    /// let refused = Server::builder().tool("visits", visits).try_build();
    /// assert!(matches!(refused, Err(BuildError::MissingState { .. })));
    /// assert!(Server::builder().state(Counter).tool("visits", visits).try_build().is_ok());
    /// ```
    pub fn try_build(mut self) -> Result<Server, BuildError> {
        let needs = std::mem::take(&mut self.needs);
        let missing: Vec<(String, String)> = needs
            .into_iter()
            .filter(|n| !self.state.0.contains_key(&n.type_id))
            .map(|n| (n.handler, n.type_name.to_owned()))
            .collect();
        if !missing.is_empty() {
            return Err(BuildError::MissingState { missing });
        }
        for id in self.extensions.keys() {
            if let Some(problem) = duomcp_schema::extension_id_problem(id) {
                return Err(BuildError::InvalidExtension {
                    id: id.clone(),
                    problem,
                });
            }
        }
        Ok(self.finish())
    }

    /// Finishes the definition.
    ///
    /// # Panics
    ///
    /// When a handler takes a [`State<T>`] whose `T` was never registered with
    /// [`state`](ServerBuilder::state): a mistake in the program, not in its input, reported
    /// at start-up with the handler and the type instead of at every call.
    /// [`try_build`](ServerBuilder::try_build) returns it as an error instead.
    ///
    /// ```
    /// let server = duomcp::server::Server::builder().tool("ping", || async { "pong" }).build();
    /// # let _ = server;
    /// ```
    #[allow(clippy::panic)]
    pub fn build(self) -> Server {
        match self.try_build() {
            Ok(server) => server,
            // Not input-dependent: the same program always fails here, at start-up.
            Err(e) => panic!("duomcp: {e}"),
        }
    }

    fn finish(self) -> Server {
        let (events, _) = broadcast::channel(256);
        let info_json = serde_json::to_value(&self.info).unwrap_or_default();
        let bus = BusSlot::default();
        Server {
            shared: Arc::new(Shared {
                tasks: tasks::TaskRuntime::new(self.tasks, events.clone(), bus.clone())
                    .with_telemetry(self.telemetry.clone()),
                #[cfg(feature = "skills")]
                skills: skills::SkillRegistry::new(self.skills),
                meta_server_info: dispatch::meta_server_info(&info_json),
                info_json,
                info: self.info,
                instructions: self.instructions,
                extensions: self.extensions,
                config: self.config,
                registry: RwLock::new(self.registry),
                state: self.state,
                events,
                sealing_key: self
                    .sealing_key
                    .unwrap_or_else(|| Keyring::from(SealingKey::random())),
                shutdown: CancellationToken::new(),
                middleware: self.middleware.map(std::sync::Mutex::new),
                meta_memo: Default::default(),
                telemetry: self.telemetry,
                bus,
                changes: RwLock::new(self.changes),
                batch: Default::default(),
                #[cfg(feature = "events")]
                event_hub: Arc::new({
                    let hub = super::events::Hub::new(self.event_types, self.events_config);
                    #[cfg(feature = "webhooks")]
                    let hub = hub.with_webhooks(self.webhooks);
                    hub
                }),
            }),
        }
    }
}

//! [`Conversation`]: the `messages` of the next Messages API request, kept by the host between
//! turns, with every assistant turn reduced to what a request may hold.

use serde::{Serialize, Serializer};

use crate::content::message::{ContentBlock, Message, TextBlock};

/// The `messages` array of the next request, in order.
///
/// An assistant Message read from a response carries `id`, `type`, `model`, `stop_reason`,
/// `stop_sequence` and `usage`; sent back in a request's `messages`, the API refuses them
/// (`messages.1.id: Extra inputs are not permitted`). [`push_response`](Self::push_response)
/// keeps the response's `role` and `content` only, its blocks unchanged (`tool_use` ids,
/// `thinking` signatures and `cache_control` included), as [`Message::request_turn`] does. Give
/// [`Session::respond`](crate::Session::respond) the response, not this copy: the response's
/// `id` names its turn in the answer memory (ARCHITECTURE.md, "Contracts": "Ids and retries").
///
/// Serializes as the array itself: `[{"role": "user", "content": […]}, {"role": "assistant",
/// "content": […]}, …]`.
///
/// The loop a host writes (the API call is the host's own):
///
/// ```
/// use toolgate_core::content::Conversation;
/// use toolgate_core::{Dispatcher, HookContext, Message, Reply};
///
/// let dispatcher = Dispatcher::builder().build().unwrap();
/// let session = dispatcher.session(HookContext::builder("u_1", "sess_1").build());
/// let mut conversation = Conversation::new();
/// conversation.push_user_text("Hello");
/// // let response: Message = client.messages(&conversation).await?;
/// let response: Message = serde_json::from_value(serde_json::json!({
///     "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
///     "content": [{"type": "text", "text": "Hi!"}], "stop_reason": "end_turn",
///     "stop_sequence": null, "usage": {"input_tokens": 9, "output_tokens": 3}
/// })).unwrap();
/// conversation.push_response(&response);
/// match toolgate_core::block_on(session.respond(&response)) {
///     Ok(Reply::Answer(answer)) => conversation.push(answer), // then ask the model again
///     Ok(_) => {}                                             // the turn is over
///     Err(e) => panic!("{e}"),                                // a halt, a refused id, …
/// }
/// assert_eq!(serde_json::to_value(&conversation).unwrap(), serde_json::json!([
///     {"role": "user", "content": [{"type": "text", "text": "Hello"}]},
///     {"role": "assistant", "content": [{"type": "text", "text": "Hi!"}]}
/// ]));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    messages: Vec<Message>,
}

impl Conversation {
    /// An empty conversation.
    pub fn new() -> Self {
        Conversation::default()
    }

    /// Appends a user turn holding one `text` block.
    pub fn push_user_text(&mut self, text: impl Into<String>) {
        self.messages
            .push(Message::user(vec![ContentBlock::Text(TextBlock {
                text: text.into(),
                extra: serde_json::Map::new(),
            })]));
    }

    /// Appends an assistant response as the request's assistant turn: its `role` and `content`
    /// only ([`Message::request_turn`]).
    pub fn push_response(&mut self, response: &Message) {
        self.messages.push(response.request_turn());
    }

    /// Appends `message` as it is: an answer from [`Reply::Answer`](crate::Reply::Answer), a
    /// [`Halt`](crate::Halt)'s answer, a user turn the host built.
    pub fn push(&mut self, message: Message) {
        self.messages.push(message);
    }

    /// The messages, in order.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages, by value.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }
}

impl Serialize for Conversation {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.messages.serialize(s)
    }
}

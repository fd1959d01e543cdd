//! What a failed model call means to the user, and what it must never show: the connection
//! doctor (`doctor`, every failure's wording and remedy) and the API keys' rules (`keys`:
//! no key over plain `http://` to another computer, no key followed through a redirect, and
//! the key scrubbed from whatever a server sends back).

pub mod doctor;
pub mod keys;

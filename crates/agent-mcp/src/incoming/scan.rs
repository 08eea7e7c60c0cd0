//! JSON's structure, one byte at a time, in linear time and without building values: the depth of
//! a line, its top-level `id`, and the elements of a `tools/list` answer's `result.tools` array
//! with the depth and `name` of each.

/// The longest `id` or tool name kept from a line; a longer one is not looked at.
const SHORT: usize = 256;

/// One open array or object.
#[derive(Debug, Default)]
pub(super) struct Frame {
    object: bool,
    /// Whether the next string of this object is a key.
    expect_key: bool,
    /// The key of the member being read, when it was short.
    key: Option<Vec<u8>>,
}

/// A value being captured: a short string or scalar whose bytes are kept.
#[derive(Debug, Default)]
pub(super) struct Capture {
    bytes: Vec<u8>,
    active: bool,
    pub(super) value: Option<Vec<u8>>,
}

impl Capture {
    fn push(&mut self, byte: u8) {
        if self.bytes.len() < SHORT {
            self.bytes.push(byte);
        } else {
            // Too long to be an id or a name worth keeping.
            self.active = false;
            self.bytes.clear();
        }
    }

    /// The first value read wins: a malformed line may give its key more values, and a later one
    /// must not replace what an answer already named (the fuzz finding
    /// `regression-answer-depends-on-read-size`: the id answered depended on the read size).
    fn finish(&mut self) {
        if self.active && !self.bytes.is_empty() && self.value.is_none() {
            self.value = Some(std::mem::take(&mut self.bytes));
        }
        self.bytes.clear();
        self.active = false;
    }
}

/// One element of a `tools/list` answer's `result.tools` array.
#[derive(Debug)]
pub(super) struct Element {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) depth: usize,
    pub(super) name: Option<Vec<u8>>,
}

/// JSON's structure, one byte at a time.
#[derive(Debug, Default)]
pub(super) struct Scan {
    offset: usize,
    frames: Vec<Frame>,
    in_string: bool,
    escaped: bool,
    /// The key being read (when short).
    key: Option<Vec<u8>>,
    /// Whether the string being read is a key.
    reading_key: bool,
    pub(super) max_depth: usize,
    /// The top-level `id`.
    pub(super) id: Capture,
    /// The `name` of the element being read.
    name: Capture,
    /// In a scalar captured for `id` or `name`.
    in_scalar: bool,
    /// Where `result.tools` opens and closes.
    array_open: Option<usize>,
    array_close: Option<usize>,
    pub(super) elements: Vec<Element>,
    /// Elements are not recorded (an overlong line keeps no offsets).
    pub(super) elements_off: bool,
}

impl Scan {
    pub(super) fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.byte(byte);
            self.offset += 1;
        }
    }

    /// The top-level `id` when it is one JSON-RPC allows (a string or a number), as raw JSON; an
    /// answer naming anything else could not be read by rmcp.
    pub(super) fn valid_id(&self) -> Option<&[u8]> {
        let raw = self.id.value.as_deref()?;
        match serde_json::from_slice::<serde_json::Value>(raw) {
            Ok(serde_json::Value::String(_) | serde_json::Value::Number(_)) => Some(raw),
            _ => None,
        }
    }

    /// `result.tools`'s brackets, when the line has that array.
    pub(super) fn tools_array(&self) -> Option<(usize, usize)> {
        Some((self.array_open?, self.array_close?))
    }

    fn capturing(&mut self) -> Option<&mut Capture> {
        if self.id.active {
            Some(&mut self.id)
        } else if self.name.active {
            Some(&mut self.name)
        } else {
            None
        }
    }

    fn byte(&mut self, byte: u8) {
        if self.in_string {
            let ends = !self.escaped && byte == b'"';
            self.escaped = !self.escaped && byte == b'\\';
            if self.reading_key {
                // A key is kept as its raw text between the quotes (the keys looked for need
                // no escapes).
                if let Some(key) = &mut self.key
                    && !ends
                {
                    if key.len() < 32 {
                        key.push(byte);
                    } else {
                        self.key = None;
                    }
                }
            } else if let Some(capture) = self.capturing() {
                // A captured value is kept as raw JSON, quotes included.
                capture.push(byte);
            }
            if ends {
                self.in_string = false;
                self.end_string();
            }
            return;
        }
        if self.in_scalar {
            if is_scalar(byte) {
                if let Some(capture) = self.capturing() {
                    capture.push(byte);
                }
                return;
            }
            self.in_scalar = false;
            self.id.finish();
            self.name.finish();
        }
        match byte {
            b'"' => {
                self.in_string = true;
                let key = self.frames.last().is_some_and(|frame| frame.object && frame.expect_key);
                self.reading_key = key;
                if key {
                    self.key = Some(Vec::new());
                } else {
                    self.start_value();
                    if let Some(capture) = self.capturing() {
                        capture.push(b'"');
                    }
                }
            }
            b'{' | b'[' => {
                // An id or a name is a string or a scalar; a container is not captured.
                self.id.active = false;
                self.name.active = false;
                self.open(byte == b'{');
            }
            b'}' | b']' => self.close(),
            b',' => {
                if let Some(frame) = self.frames.last_mut()
                    && frame.object
                {
                    frame.expect_key = true;
                    frame.key = None;
                }
            }
            b':' => {}
            byte if is_scalar(byte) => {
                self.start_value();
                self.in_scalar = true;
                if let Some(capture) = self.capturing() {
                    capture.push(byte);
                }
            }
            _ => {}
        }
    }

    /// A string that ended: a key is stored in its object; a captured value is complete.
    fn end_string(&mut self) {
        if self.reading_key {
            self.reading_key = false;
            let key = self.key.take();
            if let Some(frame) = self.frames.last_mut() {
                frame.key = key;
                frame.expect_key = false;
            }
        } else {
            self.id.finish();
            self.name.finish();
        }
    }

    /// A value starts here: capture it when it is the top-level `id` or an element's `name`.
    fn start_value(&mut self) {
        let key_is =
            |frame: &Frame, name: &[u8]| frame.object && frame.key.as_deref() == Some(name);
        match self.frames.as_slice() {
            [top] if key_is(top, b"id") => self.id.active = true,
            [result, tools, array, element]
                if !self.elements_off
                    && key_is(result, b"result")
                    && key_is(tools, b"tools")
                    && !array.object
                    && key_is(element, b"name") =>
            {
                self.name.active = true;
                self.name.bytes.clear();
            }
            _ => {}
        }
    }

    fn in_tools_array(&self) -> bool {
        let key_is =
            |frame: &Frame, name: &[u8]| frame.object && frame.key.as_deref() == Some(name);
        matches!(self.frames.as_slice(), [result, tools, array]
            if key_is(result, b"result") && key_is(tools, b"tools") && !array.object)
    }

    fn open(&mut self, object: bool) {
        if !self.elements_off && self.in_tools_array() {
            self.elements.push(Element {
                start: self.offset,
                end: self.offset,
                depth: 0,
                name: None,
            });
            self.name = Capture::default();
        }
        self.frames.push(Frame { object, expect_key: object, key: None });
        let depth = self.frames.len();
        self.max_depth = self.max_depth.max(depth);
        if !self.elements_off && depth == 3 && self.in_tools_array() {
            self.array_open = Some(self.offset);
        }
        if self.frames.len() > 3
            && let Some(element) = self.elements.last_mut()
            && element.end == element.start
        {
            element.depth = element.depth.max(depth);
        }
    }

    fn close(&mut self) {
        if !self.elements_off && self.in_tools_array() {
            self.array_close = Some(self.offset);
        }
        self.frames.pop();
        if !self.elements_off
            && self.in_tools_array()
            && let Some(element) = self.elements.last_mut()
            && element.end == element.start
        {
            element.end = self.offset + 1;
            element.name = self.name.value.take();
        }
    }
}

/// A byte of a number, `true`, `false` or `null`.
fn is_scalar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'+' | b'.')
}

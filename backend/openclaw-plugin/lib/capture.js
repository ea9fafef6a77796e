// Auto-capture: decides which user messages of a finished turn are worth saving, and with which source.

/** Marker of the auto-recall block; text containing it is never captured again. */
export const RECALL_TAG = "relevant-memories";

const ACKS = new Set(
  [
    "ok", "okay", "k", "kk", "okey", "oki", "thanks", "thank you", "thanks a lot", "thank you so much", "thx", "ty",
    "tysm", "cheers", "yes", "yeah", "yep", "yup", "no", "nope", "nah", "sure", "cool", "great", "nice", "awesome",
    "perfect", "got it", "gotcha", "understood", "alright", "all right", "fine", "done", "good", "very good",
    "sounds good", "looks good", "lgtm", "lol", "haha", "hi", "hello", "hey", "bye", "goodbye", "np", "no problem",
    "go on", "continue", "go ahead", "please continue", "next", "ok thanks", "ok thank you", "okay thanks", "thanks!",
    "merci", "danke", "gracias", "好的", "谢谢", "ありがとう", "はい", "감사합니다", "네",
  ].map((s) => s.toLowerCase()),
);

const CORRECTION_PATTERNS = [
  /^(no|nope|nah)[,.!:;]?\s+\S/i,
  /^actually\b/i,
  /^(wrong|incorrect|not quite|not really|not exactly)\b/i,
  /^correction\b/i,
  /\bthat'?s (not right|wrong|incorrect|not correct|not true)\b/i,
  /\b(you('| a)re|you were) (wrong|mistaken)\b/i,
  /\bi (meant|said)\b/i,
  /\bi (no longer|don'?t anymore|do not anymore)\b/i,
  /\b(not|isn'?t|wasn'?t) [^,.;]{1,40}, (but|it'?s|it is|rather)\b/i,
  /\bit'?s actually\b/i,
  /\bplease (remember|note) that\b.*\b(not|instead)\b/i,
];

/** Normalizes a message for the acknowledgement check. */
function normalizeAck(text) {
  return text
    .toLowerCase()
    .replace(/[\p{Extended_Pictographic}\uFE0F]/gu, "")
    .replace(/[.!?,;:~\s]+/g, " ")
    .trim();
}

/** True for messages with nothing to remember: acknowledgements, greetings, empty or tiny texts. */
export function isTrivial(text) {
  const t = String(text ?? "").trim();
  if (!t) return true;
  const n = normalizeAck(t);
  if (!n) return true; // only emoji/punctuation
  if (ACKS.has(n)) return true;
  if (t.startsWith("/")) return true; // slash commands
  const letters = n.replace(/[^\p{L}\p{N}]/gu, "");
  // Under 6 letters is too little to be a fact ("ok 👍", "yes!!"), except in scripts without spaces.
  if (letters.length < 6 && !/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u.test(letters)) {
    return true;
  }
  return false;
}

/** True when the user is correcting an earlier statement. */
export function isCorrection(text) {
  const t = String(text ?? "").trim();
  return CORRECTION_PATTERNS.some((re) => re.test(t));
}

/** Plain text of a chat message's content (string, or an array of parts with type "text"). */
export function messageText(message) {
  if (!message || typeof message !== "object") return "";
  const c = message.content;
  if (typeof c === "string") return c;
  if (Array.isArray(c)) {
    return c
      .filter((p) => p && typeof p === "object" && p.type === "text" && typeof p.text === "string")
      .map((p) => p.text)
      .join("\n");
  }
  if (typeof message.text === "string") return message.text;
  return "";
}

/** Removes an injected recall block from a message. */
export function stripRecallBlock(text) {
  const re = new RegExp(`<${RECALL_TAG}[^>]*>[\\s\\S]*?</${RECALL_TAG}>`, "g");
  return text.replace(re, "").trim();
}

/**
 * The memories to save from a finished turn: the user messages after the last assistant message that precedes
 * them (the current turn's request), gated. Returns [{text, source}].
 */
export function selectCaptures(messages, { maxChars = 1000, maxPerTurn = 3 } = {}) {
  if (!Array.isArray(messages) || messages.length === 0) return [];
  // Walk back to the start of the current turn: the last user messages before the final assistant reply.
  let i = messages.length - 1;
  while (i >= 0 && messages[i]?.role !== "user") i -= 1;
  const turn = [];
  while (i >= 0 && messages[i]?.role === "user") {
    turn.unshift(messages[i]);
    i -= 1;
  }
  const out = [];
  for (const m of turn) {
    const raw = messageText(m);
    if (raw.includes(`<${RECALL_TAG}`) && stripRecallBlock(raw) === "") continue;
    const text = stripRecallBlock(raw).trim();
    if (isTrivial(text)) continue;
    if (text.length > maxChars) continue;
    out.push({ text, source: isCorrection(text) ? "user_correction" : "conversation" });
    if (out.length >= maxPerTurn) break;
  }
  return out;
}

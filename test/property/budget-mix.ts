/**
 * fast-check generators for issue 21's budget invariant (test/gateway/budget-invariant.test.ts):
 * a mix of client behaviours on one token-budget lane, and the request each plan sends. Every
 * behaviour that once let tokens past the budget is a choice here — the model named in the body,
 * in `X-Sluice-Model`, or in both and disagreeing; tools, `response_format`, images; prompts from
 * a few hundred characters to past the tokenizer's old 64 K cut, English or CJK; JSON answers and
 * streams with and without `stream_options.include_usage`; text, tool-call or reasoning output;
 * answers past 16 KiB; clients that leave mid-answer — and calls come in bursts, so many are
 * admitted against one bucket level at once.
 */
import fc from "fast-check";

/** What one client does. */
export interface CallPlan {
  /** ms after the run's start when it is sent. */
  at: number;
  /**
   * Where the lane is named: in the body only; in `X-Sluice-Model` too (the body names the same
   * model, as an OpenAI client's always does); or `mismatch`: the header names the lane and the
   * body another model.
   */
  modelIn: "body" | "header" | "mismatch";
  prompt: { lang: "en" | "cjk"; chars: number };
  /** Extra user/system messages (the prompt is split across them). */
  messages: number;
  /** Tools, each with a description of this many characters. */
  tools: number[];
  /** A `response_format` JSON schema with a description of this many characters, or none. */
  schemaChars: number | undefined;
  /** Images as PNG data URLs: size and detail. */
  images: { w: number; h: number; detail: "low" | "high" | "auto" }[];
  /** `max_tokens` / `max_completion_tokens`, or none (the lane's `default_max_tokens` then bounds it). */
  maxTokens: { field: "max_tokens" | "max_completion_tokens"; value: number } | undefined;
  /** Words the provider generates (cut to the output bound). */
  words: number;
  output: "text" | "tools" | "reasoning";
  stream: boolean;
  includeUsage: boolean;
  /** JSON answers: ask for logprobs (≈ 75 bytes a token: a few hundred tokens pass 16 KiB). */
  logprobs: boolean;
  /** Abort after the answer's first bytes. */
  leaves: boolean;
  seed: number;
}

/** The lane's numbers the generator sizes calls against. */
export interface MixShape {
  /** The lane's `default_max_tokens`: a call without a cap generates at most this. */
  defaultMaxTokens: number;
  /** Calls per run. */
  calls: { min: number; max: number };
  /** The window the sends are spread over, ms. */
  spreadMs: number;
}

const promptArb = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      lang: fc.constantFrom("en" as const),
      chars: fc.integer({ min: 200, max: 3000 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      lang: fc.constantFrom("en" as const, "cjk" as const),
      chars: fc.integer({ min: 4000, max: 20_000 }),
    }),
  },
  // Past the 64 K characters the gateway once tokenized (the rest was counted ÷ 4).
  {
    weight: 1,
    arbitrary: fc.record({
      lang: fc.constantFrom("en" as const),
      chars: fc.integer({ min: 66_000, max: 90_000 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      lang: fc.constantFrom("cjk" as const),
      chars: fc.integer({ min: 66_000, max: 72_000 }),
    }),
  },
);

const imageArb = fc.record({
  w: fc.integer({ min: 64, max: 2048 }),
  h: fc.integer({ min: 64, max: 2048 }),
  detail: fc.constantFrom("low" as const, "high" as const, "auto" as const),
});

/**
 * A run's leanings, in percent: how likely each call is to stream, to ask for usage, to ask for
 * logprobs, to leave, to name the lane in the header. Drawn once a run, so some runs are mostly
 * one behaviour: the invariant compares totals, and in an even mix one way of over-counting can
 * hide another way of under-counting.
 */
export interface Leaning {
  stream: number;
  includeUsage: number;
  logprobs: number;
  leaves: number;
  header: number;
}

/** A share in percent, at the ends as often as between them: a run all one way is a sharp test. */
const share = (max: number) => fc.oneof(fc.constantFrom(0, max), fc.integer({ min: 0, max }));

const leaningArb: fc.Arbitrary<Leaning> = fc.record({
  stream: share(100),
  includeUsage: share(100),
  logprobs: share(100),
  leaves: share(40),
  // Never none: naming the lane in the header was the widest way past the budget (issue 21 defect 1).
  header: fc.oneof(fc.constant(100), fc.integer({ min: 25, max: 100 })),
});

/** True with `percent` % probability. */
const chance = (percent: number) => fc.integer({ min: 0, max: 99 }).map((x) => x < percent);

function callArb(shape: MixShape, lean: Leaning, at: fc.Arbitrary<number>): fc.Arbitrary<CallPlan> {
  return fc
    .record({
      at,
      modelIn: fc
        .tuple(chance(lean.header), chance(25))
        .map(([header, mismatch]) =>
          !header ? ("body" as const) : mismatch ? ("mismatch" as const) : ("header" as const),
        ),
      prompt: promptArb,
      messages: fc.integer({ min: 1, max: 3 }),
      tools: fc.oneof(
        { weight: 3, arbitrary: fc.constant<number[]>([]) },
        {
          weight: 2,
          arbitrary: fc.array(
            fc.oneof(
              { weight: 4, arbitrary: fc.integer({ min: 50, max: 2000 }) },
              fc.integer({ min: 2000, max: 20_000 }),
            ),
            { minLength: 1, maxLength: 3 },
          ),
        },
      ),
      schemaChars: fc.option(fc.integer({ min: 50, max: 4000 }), { freq: 3, nil: undefined }),
      images: fc.oneof(
        { weight: 3, arbitrary: fc.constant<CallPlan["images"]>([]) },
        { weight: 1, arbitrary: fc.array(imageArb, { minLength: 1, maxLength: 3 }) },
      ),
      // The cap relative to what the model will say: mostly above it (a margin the reconcile
      // refunds), sometimes below (the answer is cut at the cap).
      maxTokens: fc.option(
        fc.record({
          field: fc.constantFrom("max_tokens" as const, "max_completion_tokens" as const),
          over: fc.oneof(
            { weight: 1, arbitrary: fc.integer({ min: -300, max: 0 }) },
            { weight: 3, arbitrary: fc.integer({ min: 0, max: 3000 }) },
          ),
        }),
        { freq: 4, nil: undefined },
      ),
      words: fc.oneof(
        { weight: 2, arbitrary: fc.integer({ min: 1, max: 300 }) },
        { weight: 4, arbitrary: fc.integer({ min: 300, max: 2500 }) },
        { weight: 2, arbitrary: fc.integer({ min: 4200, max: 6000 }) },
      ),
      output: fc.constantFrom("text" as const, "tools" as const, "reasoning" as const),
      stream: chance(lean.stream),
      includeUsage: chance(lean.includeUsage),
      logprobs: chance(lean.logprobs),
      leaves: chance(lean.leaves),
      seed: fc.integer({ min: 1, max: 0x7fffffff }),
    })
    .map(({ maxTokens: cap, ...p }) => ({
      ...p,
      maxTokens:
        cap === undefined ? undefined : { field: cap.field, value: Math.max(16, p.words + cap.over) },
      // A call without a cap is answered within the lane's default: what the gateway assumes.
      words: Math.min(p.words, cap === undefined ? shape.defaultMaxTokens : Math.max(16, p.words + cap.over)),
      // Tool-call output needs tools to call.
      output: p.output === "tools" && p.tools.length === 0 ? ("text" as const) : p.output,
    }));
}

/**
 * A run's calls: bursts (several calls within a few ms, so they are admitted against one level)
 * spread over `spreadMs`, sorted by send time.
 */
export function mixArb(shape: MixShape): fc.Arbitrary<CallPlan[]> {
  return leaningArb.chain((lean) => mixWith(shape, lean));
}

function mixWith(shape: MixShape, lean: Leaning): fc.Arbitrary<CallPlan[]> {
  const burst = fc
    .tuple(fc.integer({ min: 0, max: shape.spreadMs }), fc.integer({ min: 2, max: 10 }))
    .chain(([start, n]) =>
      fc.array(callArb(shape, lean, fc.integer({ min: start, max: start + 5 })), {
        minLength: n,
        maxLength: n,
      }),
    );
  return fc
    .array(burst, { minLength: 4, maxLength: 10 })
    .map((bursts) => bursts.flat().slice(0, shape.calls.max))
    .filter((calls) => calls.length >= shape.calls.min)
    .map((calls) => calls.sort((a, b) => a.at - b.at));
}

/** The largest output a plan may be billed: its cap, else the lane's default. */
export const outputBound = (p: CallPlan, defaultMaxTokens: number): number =>
  p.maxTokens?.value ?? defaultMaxTokens;

// ---- the request a plan sends ---------------------------------------------------------------

const EN =
  "the of and to in is that for it as was with be by on not he this are or his from at which but have an they you were her she there been one all we their has would when if so no will more can said who about what time up out them into just some could other than then now only its over also new two may first any these like how well our way even back because good most very where after year know get through should people make made much great day see work".split(
    " ",
  );
const HAN =
  "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严";

/** Deterministic text of `chars` characters for `seed`: English words, or CJK with a comma or full stop every few characters. */
export function promptText(lang: "en" | "cjk", chars: number, seed: number): string {
  let state = seed >>> 0 || 1;
  const next = (n: number) => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return (state >>> 8) % n;
  };
  const parts: string[] = [];
  let length = 0;
  while (length < chars) {
    let piece: string;
    if (lang === "en") piece = `${EN[next(EN.length)]}${next(12) === 0 ? ". " : " "}`;
    else piece = `${HAN[next(HAN.length)]}${next(14) === 0 ? (next(2) === 0 ? "，" : "。") : ""}`;
    parts.push(piece);
    length += piece.length;
  }
  return parts.join("").slice(0, chars);
}

/** A PNG data URL whose IHDR says `w` × `h` (a few hundred bytes of pixels follow; nobody decodes them). */
export function pngDataUrl(w: number, h: number, seed: number): string {
  const head = Buffer.alloc(33);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(head, 0);
  head.writeUInt32BE(13, 8);
  head.write("IHDR", 12, "latin1");
  head.writeUInt32BE(w, 16);
  head.writeUInt32BE(h, 20);
  head.writeUInt8(8, 24);
  head.writeUInt8(2, 25);
  const pixels = Buffer.alloc(512);
  for (let i = 0; i < pixels.length; i++) pixels[i] = (seed * (i + 1)) & 0xff;
  return `data:image/png;base64,${Buffer.concat([head, pixels]).toString("base64")}`;
}

/** The body (and headers) `plan` sends for lane `lane`; call id `id`. */
export function planRequest(
  plan: CallPlan,
  lane: string,
  id: string,
): { headers: Record<string, string>; body: string } {
  const text = promptText(plan.prompt.lang, plan.prompt.chars, plan.seed);
  const per = Math.ceil(text.length / plan.messages);
  const messages: Record<string, unknown>[] = [];
  for (let i = 0; i < plan.messages; i++) {
    const role = i === 0 && plan.messages > 1 ? "system" : "user";
    messages.push({ role, content: text.slice(i * per, (i + 1) * per) });
  }
  if (plan.images.length > 0) {
    const last = messages[messages.length - 1]!;
    last.content = [
      { type: "text", text: last.content },
      ...plan.images.map((im, i) => ({
        type: "image_url",
        image_url: { url: pngDataUrl(im.w, im.h, plan.seed + i), detail: im.detail },
      })),
    ];
  }
  const body: Record<string, unknown> = {
    model: plan.modelIn === "mismatch" ? `${lane}-other` : lane,
    messages,
  };
  if (plan.tools.length > 0)
    body.tools = plan.tools.map((chars, i) => ({
      type: "function",
      function: {
        name: i === 0 ? "lookup" : `tool_${i}`,
        description: promptText("en", chars, plan.seed + 7 * (i + 1)),
        parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
      },
    }));
  if (plan.schemaChars !== undefined)
    body.response_format = {
      type: "json_schema",
      json_schema: {
        name: "answer",
        schema: {
          type: "object",
          description: promptText("en", plan.schemaChars, plan.seed + 3),
          properties: { text: { type: "string" } },
        },
      },
    };
  if (plan.maxTokens !== undefined) body[plan.maxTokens.field] = plan.maxTokens.value;
  if (plan.stream) {
    body.stream = true;
    if (plan.includeUsage) body.stream_options = { include_usage: true };
  } else if (plan.logprobs) body.logprobs = true;
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "x-call-id": id,
    "x-test-output": plan.output,
    "x-test-words": String(plan.words),
  };
  if (plan.modelIn !== "body") headers["x-sluice-model"] = lane;
  return { headers, body: JSON.stringify(body) };
}

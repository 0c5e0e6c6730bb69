// A stand-in for the Workers AI binding, for offline runs only. Workers AI
// has no local simulator, so the generated local configuration binds AI to
// this Worker's LocalAI entrypoint, which has the binding's run(model,
// inputs) and answers it from a Workers AI REST service at AI_REST_URL
// (POST {AI_REST_URL}/run/{model}, {"result":…,"success":…,"errors":[…]}).
// That is the same service and shape the wazero host's ai import calls, so
// both hosts meet the same model stand-in in the end-to-end tests. The
// deployed configuration binds the real AI binding instead and never
// includes this Worker.

import { WorkerEntrypoint } from "cloudflare:workers";

export class LocalAI extends WorkerEntrypoint {
  /** run returns the model's result, or throws as the binding does on failure. */
  async run(model, inputs) {
    const base = String(this.env.AI_REST_URL ?? "").replace(/\/+$/, "");
    if (!base) throw new Error("AI_REST_URL is not set for the local AI binding");
    const resp = await fetch(`${base}/run/${model}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(inputs),
    });
    const text = await resp.text();
    let doc;
    try {
      doc = JSON.parse(text);
    } catch {
      throw new Error(`AI service answered ${resp.status} with a body that is not JSON`);
    }
    if (!resp.ok || doc?.success === false) {
      throw new Error(doc?.errors?.[0]?.message ?? `AI service answered ${resp.status}`);
    }
    return doc?.result ?? null;
  }
}

export default {
  fetch() {
    return new Response("the local AI binding has no HTTP interface\n", { status: 404 });
  },
};

// runCase(name, ep): load NAME/case.json ({"model": file, "runs": [{"inputs": [{name, dtype, dims, file}]}]}),
// create an onnxruntime-web session on NAME/<model> with execution provider(s) EP
// ("wasm", or ["webgpu"] / ["webgpu", "wasm"] on harness-webgpu.html, which loads the WebGPU build;
// verbose onnxruntime logging there, which prints each node's execution provider),
// run every feed and return the outputs' raw little-endian bytes (base64) with
// their dtypes and dims.
// probeWebGPU(): {adapter: {vendor, architecture, shaderF16} | null, reason: why there is none | null}.
ort.env.wasm.wasmPaths = new URL("ort/", document.baseURI).href;
ort.env.wasm.numThreads = globalThis.crossOriginIsolated ? 2 : 1;

const ARRAYS = { float32: Float32Array, float64: Float64Array, int64: BigInt64Array, int32: Int32Array,
  int8: Int8Array, uint8: Uint8Array, int16: Int16Array, uint16: Uint16Array, uint32: Uint32Array,
  uint64: BigUint64Array, bool: Uint8Array };

function toBase64(view) {
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

async function bytesOf(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return r.arrayBuffer();
}

globalThis.probeWebGPU = async function probeWebGPU() {
  if (!globalThis.isSecureContext) return { adapter: null, reason: "not a secure context (navigator.gpu needs one)" };
  if (!navigator.gpu) return { adapter: null, reason: "navigator.gpu is undefined (browser without WebGPU)" };
  try {
    const adapter = await navigator.gpu.requestAdapter();
    if (!adapter) return { adapter: null, reason: "navigator.gpu.requestAdapter() returned null (no GPU adapter)" };
    const info = adapter.info || {};
    await (await adapter.requestDevice()).destroy();
    return { adapter: { vendor: info.vendor ?? "", architecture: info.architecture ?? "",
      shaderF16: adapter.features.has("shader-f16") }, reason: null };
  } catch (e) {
    return { adapter: null, reason: `requesting a WebGPU adapter/device failed: ${e && e.message || e}` };
  }
};

globalThis.runCase = async function runCase(name, ep = "wasm") {
  const eps = Array.isArray(ep) ? ep : [ep];
  const spec = await (await fetch(`${name}/case.json`)).json();
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(`${name}/${spec.model}`, { executionProviders: eps,
    logSeverityLevel: eps.includes("webgpu") ? 0 : 2 });
  const sessionMs = performance.now() - t0;
  const runs = [];
  for (const run of spec.runs) {
    const feeds = {};
    for (const inp of run.inputs) {
      const data = new ARRAYS[inp.dtype](await bytesOf(`${name}/${inp.file}`));
      feeds[inp.name] = new ort.Tensor(inp.dtype, data, inp.dims);
    }
    const results = await session.run(feeds);
    runs.push(session.outputNames.map((o) => ({ name: o, dtype: results[o].type, dims: results[o].dims,
      b64: toBase64(results[o].data) })));
  }
  await session.release();
  return { sessionMs, runs };
};
globalThis.harnessReady = true;

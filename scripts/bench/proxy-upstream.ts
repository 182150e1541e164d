/** Bench helper process: the fake upstream (no request recording) on a given port. */
import { startFakeUpstream } from "../../test/fake-upstream/server";
const port = Number(process.argv[2] ?? 0);
const fake = await startFakeUpstream({ record: false, port });
console.log(fake.url);

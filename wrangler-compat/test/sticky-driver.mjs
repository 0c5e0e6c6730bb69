// Reads a JSON array of {authorization, cookie} from standard input and
// prints the account hint src/sticky.js finds for each, so a Go test can
// compare it with shared/keys.AccountHint on keys made by shared/keys.

import { accountHint } from "../src/sticky.js";

let input = "";
process.stdin.setEncoding("utf8");
for await (const chunk of process.stdin) input += chunk;
const cases = JSON.parse(input);
process.stdout.write(JSON.stringify(cases.map((c) => accountHint(c.authorization, c.cookie))));

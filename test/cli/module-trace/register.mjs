// `node --import ./register.mjs …`: appends the URL of every module the
// process loads through the ES module loader to the file MODULE_TRACE_FILE
// names, one a line. A package the CLI imports shows up by its entry file.
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);

// The OWASP API Security ruleset as published, with no rule changed (`npm run lint:openapi` runs it beside
// .spectral.mjs). Its errors this document keeps, each with its reason, are listed in scripts/lint-openapi.mjs.
import owaspModule from '@stoplight/spectral-owasp-ruleset';

export default { extends: [owaspModule.default ?? owaspModule] };

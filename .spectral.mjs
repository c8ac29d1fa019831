// Spectral's rules for openapi.json (`npm run lint:openapi`, part of `npm test`): the OpenAPI
// recommended set (spectral:oas), and the OWASP API Security ruleset's rate-limit rules on the
// operations of the API. Every rule turned off or kept as a warning is listed here with its reason.
import owaspModule from '@stoplight/spectral-owasp-ruleset';
import { oas } from '@stoplight/spectral-rulesets';

const owasp = owaspModule.default ?? owaspModule;

// The operations an API key answers: /api/… except the document itself (no authentication, no limit).
// The path's x-methods-not-allowed (the 405 of other methods, before authentication) is no operation.
const API_OPERATIONS = "$.paths[?(@property.match(/^\\/api\\/(?!openapi\\.json$)/))][?(@property.match(/^(get|put|post|delete|options|head|patch|trace)$/))]";

const onApiOperations = (name, given) => ({ ...owasp.rules[name], given, severity: 'error' });

export default {
  extends: [
    [oas, 'recommended'],
    // Only its rate-limit rules, below, on the API's operations: the rest of the set is off.
    [owasp, 'off'],
  ],
  rules: {
    // Every operation answers a 2xx: the methods a path does not serve are its x-methods-not-allowed, not operations.
    'operation-success-response': 'error',
    // The contract's paths end in `/` (SPEC §2: /api/methods/, /api/limits/{uid}/): the documented form is the one with it.
    'path-keys-no-trailing-slash': 'off',
    // components.responses has one response per code of the error table (so a new code is documented at once);
    // an operation that answers one status with several codes declares their union inline, leaving some unused.
    'oas3-unused-component': 'off',
    // Warning kept: the service is not published with a contact; an installation adds its own.
    'info-contact': 'warn',
    'owasp:api4:2023-rate-limit': onApiOperations('owasp:api4:2023-rate-limit', `${API_OPERATIONS}.responses[?(@property.match(/^(2|4)/))]`),
    'owasp:api4:2023-rate-limit-responses-429': onApiOperations('owasp:api4:2023-rate-limit-responses-429', `${API_OPERATIONS}.responses`),
    'owasp:api4:2023-rate-limit-retry-after': onApiOperations('owasp:api4:2023-rate-limit-retry-after', `${API_OPERATIONS}.responses[429].headers`),
  },
};

// Spectral's rules for openapi.json (`npm run lint:openapi`, part of `npm test`): the OpenAPI
// recommended set (spectral:oas), and the OWASP API Security ruleset's rate-limit rules on the
// operations of the API. Every rule turned off or kept as a warning is listed here with its reason.
import owaspModule from '@stoplight/spectral-owasp-ruleset';
import { oas } from '@stoplight/spectral-rulesets';

const owasp = owaspModule.default ?? owaspModule;

// The operations an API key answers: /api/… except the document itself (no authentication, no limit),
// and except the operations that only answer 405 (refused before authentication, so before any limit).
const API_OPERATIONS = "$.paths[?(@property.match(/^\\/api\\/(?!openapi\\.json$)/))][?(@property != 'parameters' && @['x-method-not-allowed'] != true)]";

const onApiOperations = (name, given) => ({ ...owasp.rules[name], given, severity: 'error' });

// Every operation but those that only answer 405 (declared so the document says what every method gets).
const SERVED_OPERATIONS = "$.paths[*][?(@property.match(/^(get|put|post|delete|options|head|patch|trace)$/) && @['x-method-not-allowed'] != true)]";

export default {
  extends: [
    [oas, 'recommended'],
    // Only its rate-limit rules, below, on the API's operations: the rest of the set is off.
    [owasp, 'off'],
  ],
  rules: {
    // An operation that only answers 405 has no 2xx by nature; every other operation must have one.
    'operation-success-response': { ...oas.rules['operation-success-response'], given: SERVED_OPERATIONS },
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

import { describe, expect, it } from 'vitest';
import { firstRepeatedMember } from '../../src/http/json-repeated-member.js';

describe('firstRepeatedMember', () => {
  it('finds a member given twice in any object, however its name is spelled', () => {
    expect(firstRepeatedMember('{"amount": "1.00", "amount": "1.00"}')).toEqual({ name: 'amount', position: 19 });
    expect(firstRepeatedMember('{"amount": "1.00", "\\u0061mount": "2.00"}')?.name).toBe('amount');
    expect(firstRepeatedMember('{"a": [{"b": 1, "b": 2}]}')?.name).toBe('b');
    expect(firstRepeatedMember('{"a": {"c": 1}, "b": 2, "a": 3}')?.name).toBe('a');
  });

  it('tells names from values, and one object from another', () => {
    expect(firstRepeatedMember('{"a": "a", "b": "\\"a\\":"}')).toBeUndefined();
    expect(firstRepeatedMember('{"a": {"a": {"a": 1}}}')).toBeUndefined();
    expect(firstRepeatedMember('[{"a": 1}, {"a": 1}]')).toBeUndefined();
    expect(firstRepeatedMember('{"a" :1,"b"\n:2}')).toBeUndefined();
    expect(firstRepeatedMember('"a"')).toBeUndefined();
  });
});

// EIP-55 address checking as the user types, and a labelled input that shows the verdict.
import { getAddress } from 'viem';
import { h, uid } from './dom.ts';

export type AddressCheck =
  | { state: 'empty' }
  | { state: 'valid'; address: string }
  | { state: 'invalid'; message: string };

const HEX40 = /^[0-9a-fA-F]{40}$/;

/**
 * The service accepts an address in all lower case, all upper case, or correct EIP-55 mixed case,
 * and rejects mixed case with a wrong checksum (it is most likely a typo). Same rules here.
 */
export function checkAddress(raw: string): AddressCheck {
  const input = raw.trim();
  if (input === '') return { state: 'empty' };
  if (!/^0x/i.test(input)) return { state: 'invalid', message: 'An address starts with 0x.' };
  const digits = input.slice(2);
  if (!/^[0-9a-fA-F]*$/.test(digits)) {
    return { state: 'invalid', message: 'An address has only hexadecimal digits (0-9, a-f) after 0x.' };
  }
  if (!HEX40.test(digits)) {
    return {
      state: 'invalid',
      message: `An address has 40 hexadecimal digits after 0x; this one has ${digits.length}.`,
    };
  }
  const checksummed = getAddress(`0x${digits.toLowerCase()}`);
  const singleCase = digits === digits.toLowerCase() || digits === digits.toUpperCase();
  if (!singleCase && checksummed.slice(2) !== digits) {
    return {
      state: 'invalid',
      message:
        'The mix of upper and lower case does not match the EIP-55 checksum: check the address for a typo.',
    };
  }
  return { state: 'valid', address: checksummed };
}

export interface AddressField {
  root: HTMLElement;
  input: HTMLInputElement;
  /** The checksummed address, or null when the field is empty or invalid (the message says why). */
  value(): string | null;
  set(value: string): void;
}

export function addressField(options: {
  label: string;
  name: string;
  value?: string;
  required?: boolean;
}): AddressField {
  const id = uid(options.name);
  const messageId = `${id}-message`;
  const input = h('input', {
    id,
    name: options.name,
    type: 'text',
    inputmode: 'text',
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: '0x…',
    maxlength: 64,
    required: options.required ?? false,
    'aria-describedby': messageId,
    class: 'address-input',
  });
  const message = h('p', { id: messageId, class: 'field-message', 'aria-live': 'polite' });
  const show = () => {
    const check = checkAddress(input.value);
    if (check.state === 'invalid') input.setAttribute('aria-invalid', 'true');
    else input.removeAttribute('aria-invalid');
    message.className = `field-message ${check.state}`;
    message.textContent =
      check.state === 'invalid'
        ? check.message
        : check.state === 'valid'
          ? `Valid address (${check.address}).`
          : '';
    // The browser's own validation blocks submission with the same words.
    input.setCustomValidity(check.state === 'invalid' ? check.message : '');
    return check;
  };
  input.addEventListener('input', show);
  if (options.value) {
    input.value = options.value;
    show();
  }
  return {
    root: h('div', { class: 'field' }, h('label', { for: id }, options.label), input, message),
    input,
    value() {
      const check = show();
      return check.state === 'valid' ? check.address : null;
    },
    set(value) {
      input.value = value;
      show();
    },
  };
}

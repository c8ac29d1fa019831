/** The longest uid a record may have (the tables' CHECK), in characters. */
export const MAX_UID_LENGTH = 255;
